import '@picocss/pico/css/pico.min.css';
import './styles.css';
import { render } from 'preact';
import { App } from './app.js';
import { interceptLinks } from './router.js';

interceptLinks();
render(<App />, document.getElementById('app')!);
