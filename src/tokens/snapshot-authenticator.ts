// The route table's authenticator (src/api/route.ts) for an ingest-only process: project tokens are
// looked up in the token snapshot the workers publish (snapshot.ts), never in a store; the admin
// token is SERVICE_ADMIN_TOKEN as in every role.
import { Authenticator, bearer } from '../api/auth.js';
import { errors } from '../errors/catalogue.js';
import { sha256Hex } from '../../client/src/contract/ids.js';
import { TOKEN_RE } from '../../client/src/contract/tokens.js';
import type { ProjectRepo, TokenPrincipal } from '../store/projects.js';
import type { TokenSnapshot } from './snapshot.js';

export class SnapshotAuthenticator extends Authenticator {
  constructor(
    private readonly snapshot: TokenSnapshot,
    adminToken: string | undefined,
  ) {
    // The project repository is only read by the two methods overridden below: there is none here.
    super(null as unknown as ProjectRepo, adminToken);
  }

  override async authenticate(header: string | undefined): Promise<TokenPrincipal> {
    const token = bearer(header);
    if (!token || !TOKEN_RE.test(token)) throw errors.unauthorized();
    return this.authenticateHash(sha256Hex(token));
  }

  override async authenticateHash(hash: string): Promise<TokenPrincipal> {
    const principal = this.snapshot.byHash(hash);
    if (!principal) throw errors.unauthorized('the token is unknown or revoked');
    return principal;
  }
}
