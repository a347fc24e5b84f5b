// The HTTP service (Hummingbird 2) arrives with the server issue; until then this module only fixes
// its place in the dependency graph: StorekeeperServer → StorekeeperStorage, AppStoreServer, GooglePlay.
import AppStoreServer
import GooglePlay
import StorekeeperStorage
