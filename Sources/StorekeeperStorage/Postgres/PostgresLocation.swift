import Foundation

/// A PostgreSQL database as named by a `postgres://user:password@host:port/database?options` URL.
///
/// Understood options: `sslmode` (`disable`, `prefer` – the default –, `require`, `verify-ca`,
/// `verify-full`, with libpq's meaning), `connect_timeout` (seconds, default 10), `pool_size`
/// (connections, default 10), `acquire_timeout` (seconds to wait for a free connection before
/// failing as unavailable, default 30) and `statement_cache_size` (how many statements are
/// prepared under a name on each connection, default 256; 0 sends every statement unnamed, for a
/// pooler between Storekeeper and PostgreSQL that does not keep a session's prepared statements).
public struct PostgresLocation: Sendable, Hashable, CustomStringConvertible {
    /// How the connection uses TLS.
    public enum TLSMode: String, Sendable, Hashable, CaseIterable {
        /// Plain TCP only.
        case disable
        /// TLS if the server offers it, without checking its certificate.
        case prefer
        /// TLS or nothing, without checking the certificate.
        case require
        /// TLS with a certificate chain the system trusts, any host name.
        case verifyCA = "verify-ca"
        /// TLS with a trusted certificate for this host name.
        case verifyFull = "verify-full"
    }

    public var host: String
    public var port: Int
    public var username: String
    public var password: String?
    /// The database name; nil means the server's default (the user name).
    public var database: String?
    public var tls: TLSMode
    public var connectTimeout: Duration
    public var poolSize: Int
    public var acquireTimeout: Duration
    /// Statements prepared under a name per connection at most (``PostgresStatementNames``); 0: none.
    public var statementCacheSize: Int

    /// Parses `url`; a malformed one throws ``StorageError/Reason/badConfiguration`` saying what is
    /// wrong, never repeating the password.
    public init(url: String) throws {
        let shown = Self.redacting(url)
        guard let components = URLComponents(string: url) else {
            throw StorageError(.badConfiguration, "'\(shown)' is not a valid PostgreSQL URL")
        }
        guard let scheme = components.scheme?.lowercased(), scheme == "postgres" || scheme == "postgresql" else {
            throw StorageError(
                .badConfiguration, "'\(shown)' is not a PostgreSQL URL (expected postgres:// or postgresql://)")
        }
        guard let host = components.host, !host.isEmpty else {
            throw StorageError(.badConfiguration, "'\(shown)' names no host")
        }
        guard let username = components.user, !username.isEmpty else {
            throw StorageError(.badConfiguration, "'\(shown)' names no user (postgres://user:password@host/database)")
        }
        self.host = host
        self.port = components.port ?? 5432
        self.username = username
        self.password = components.password
        let path = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        self.database = path.isEmpty ? nil : path
        self.tls = .prefer
        self.connectTimeout = .seconds(10)
        self.poolSize = 10
        self.acquireTimeout = .seconds(30)
        self.statementCacheSize = 256
        guard (1...65_535).contains(port) else {
            throw StorageError(.badConfiguration, "'\(shown)' has port \(port), outside 1...65535")
        }
        for item in components.queryItems ?? [] {
            try apply(option: item.name, value: item.value ?? "", in: shown)
        }
    }

    private mutating func apply(option: String, value: String, in shown: String) throws {
        func seconds() throws -> Duration {
            guard let seconds = Double(value), seconds > 0, seconds.isFinite else {
                throw StorageError(
                    .badConfiguration, "\(option)=\(value) in '\(shown)' is not a positive number of seconds")
            }
            return .milliseconds(Int64((seconds * 1000).rounded(.up)))
        }
        switch option {
        case "sslmode":
            guard let mode = TLSMode(rawValue: value) else {
                let modes = TLSMode.allCases.map(\.rawValue).joined(separator: ", ")
                throw StorageError(.badConfiguration, "sslmode=\(value) in '\(shown)' is not one of \(modes)")
            }
            tls = mode
        case "connect_timeout":
            connectTimeout = try seconds()
        case "acquire_timeout":
            acquireTimeout = try seconds()
        case "pool_size":
            guard let size = Int(value), size > 0 else {
                throw StorageError(.badConfiguration, "pool_size=\(value) in '\(shown)' is not a positive number")
            }
            poolSize = size
        case "statement_cache_size":
            guard let size = Int(value), size >= 0 else {
                throw StorageError(
                    .badConfiguration,
                    "statement_cache_size=\(value) in '\(shown)' is not a number of statements (0 or more)")
            }
            statementCacheSize = size
        default:
            throw StorageError(
                .badConfiguration,
                "'\(shown)' has unknown option '\(option)' (known: sslmode, connect_timeout, pool_size, acquire_timeout, statement_cache_size)"
            )
        }
    }

    /// The URL without its password, for logs and messages.
    public var description: String {
        var text = "postgres://\(username)\(password == nil ? "" : ":***")@\(host):\(port)"
        if let database { text += "/\(database)" }
        return text
    }

    /// `url` with the password part of its user info replaced by `***`, whether or not the rest
    /// of it parses.
    public static func redacting(_ url: String) -> String {
        guard let schemeEnd = url.range(of: "://") else { return url }
        let rest = url[schemeEnd.upperBound...]
        // The user info ends at the last '@' before the path: a password may contain '@' or '/'.
        guard let at = rest.lastIndex(of: "@") else { return url }
        let userInfo = rest[..<at]
        guard let colon = userInfo.firstIndex(of: ":") else { return url }
        return String(url[..<colon]) + ":***" + String(rest[at...])
    }
}
