// The storage layer (SQLite and PostgreSQL backends behind one protocol) arrives with the server
// issue; until then this module only fixes its place in the dependency graph:
// StorekeeperStorage → Storekeeper.
@_exported import Storekeeper
