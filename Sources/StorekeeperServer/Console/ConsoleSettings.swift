import Configuration
import Crypto
public import Foundation
import _CryptoExtras

/// The operators' console (`/console`): who may sign in, and how sessions behave.
public struct ConsoleSettings: Sendable, Hashable {
    /// The people who may sign in; none: the console is not served.
    public var operators: [ConsoleOperator]
    /// How long a session lasts after signing in.
    public var sessionLifetime: TimeInterval
    /// The key sessions and CSRF tokens are signed with (at least 32 characters). Nil: a random
    /// key at every start (sessions end with a restart, and each instance signs its own).
    public var sessionSecret: String?
    /// Whether the session cookie is `Secure`. Nil: when the request came over TLS, as a proxy in
    /// front says with `X-Forwarded-Proto: https`.
    public var secureCookie: Bool?

    public init(
        operators: [ConsoleOperator] = [], sessionLifetime: TimeInterval = 8 * 3600, sessionSecret: String? = nil,
        secureCookie: Bool? = nil
    ) {
        self.operators = operators
        self.sessionLifetime = sessionLifetime
        self.sessionSecret = sessionSecret
        self.secureCookie = secureCookie
    }

    /// Whether `/console` is served.
    public var isEnabled: Bool { !operators.isEmpty }
}

/// What an operator may do in the console.
public enum ConsoleRole: String, Sendable, Hashable, CaseIterable {
    /// Sees everything, changes nothing.
    case readOnly = "read-only"
    /// Also acts: retries notifications, extends renewal dates, refreshes purchases.
    case `operator`
}

/// A person who may sign in to the console. Never shows the password.
public struct ConsoleOperator: Sendable, Hashable, CustomStringConvertible {
    public var name: String
    public var role: ConsoleRole
    public var credential: ConsoleCredential

    public init(name: String, role: ConsoleRole, credential: ConsoleCredential) {
        self.name = name
        self.role = role
        self.credential = credential
    }

    public var description: String { "console operator \(name) (\(role.rawValue))" }

    /// Whether `password` is this operator's, compared in constant time.
    public func accepts(password: String) -> Bool { credential.accepts(password) }
}

/// How an operator's password is checked: the password itself (from a secret: an environment
/// variable or a file) or a PBKDF2-SHA256 hash of it.
public enum ConsoleCredential: Sendable, Hashable, CustomStringConvertible {
    case password(String)
    case pbkdf2(PasswordHash)

    public var description: String {
        switch self {
        case .password: "password (hidden)"
        case .pbkdf2(let hash): "pbkdf2-sha256 with \(hash.iterations) iterations"
        }
    }

    func accepts(_ candidate: String) -> Bool {
        switch self {
        case .password(let expected):
            // Digests of equal length, compared without an early exit.
            return constantTimeEqual(
                Array(SHA256.hash(data: Data(candidate.utf8))), Array(SHA256.hash(data: Data(expected.utf8))))
        case .pbkdf2(let hash):
            return hash.matches(candidate)
        }
    }
}

/// `pbkdf2-sha256$<iterations>$<salt, base64>$<derived key, base64>`, as Python's
/// `hashlib.pbkdf2_hmac('sha256', password, salt, iterations)` makes it.
public struct PasswordHash: Sendable, Hashable {
    public var iterations: Int
    public var salt: Data
    public var derivedKey: Data

    static let prefix = "pbkdf2-sha256"

    /// Parses the text form; nil with the reason in `problem` when it is not one.
    public static func parse(_ text: String) -> Result<PasswordHash, PasswordHashProblem> {
        let parts = text.split(separator: "$", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 4, parts[0] == prefix else {
            return .failure(PasswordHashProblem("is not pbkdf2-sha256$<iterations>$<salt base64>$<hash base64>"))
        }
        guard let iterations = Int(parts[1]), iterations >= 210_000 else {
            // OWASP's minimum for PBKDF2-SHA256, which swift-crypto enforces too.
            return .failure(PasswordHashProblem("needs at least 210000 iterations"))
        }
        guard let salt = Data(base64Encoded: parts[2]), salt.count >= 16 else {
            return .failure(PasswordHashProblem("salt must be base64 of at least 16 bytes"))
        }
        guard let key = Data(base64Encoded: parts[3]), key.count == 32 else {
            return .failure(PasswordHashProblem("hash must be base64 of 32 bytes (SHA-256)"))
        }
        return .success(PasswordHash(iterations: iterations, salt: salt, derivedKey: key))
    }

    func matches(_ candidate: String) -> Bool {
        guard
            let derived = try? KDF.Insecure.PBKDF2.deriveKey(
                from: Data(candidate.utf8), salt: salt, using: .sha256, outputByteCount: derivedKey.count,
                rounds: iterations)
        else { return false }
        return derived.withUnsafeBytes { constantTimeEqual(Array($0), Array(derivedKey)) }
    }
}

/// Why a password hash can't be used.
public struct PasswordHashProblem: Error, Sendable, Hashable {
    public var message: String
    init(_ message: String) { self.message = message }
}

/// Equal length and equal bytes, read to the end whatever differs.
func constantTimeEqual(_ left: [UInt8], _ right: [UInt8]) -> Bool {
    guard left.count == right.count else { return false }
    var difference: UInt8 = 0
    for index in left.indices { difference |= left[index] ^ right[index] }
    return difference == 0
}

extension Parse {
    /// `console`: operators (`console.operators.<name>` with `role` and one of `password`,
    /// `passwordFile` or `passwordHash`), `sessionLifetime`, `sessionSecret`, `secureCookie`.
    mutating func console() -> ConsoleSettings {
        var settings = ConsoleSettings()
        guard let section = root["console"] else { return settings }
        guard let console = section as? [String: Any] else {
            problem("console", "must be an object with operators and session settings")
            return settings
        }
        settings.sessionLifetime = seconds("console.sessionLifetime") ?? settings.sessionLifetime
        settings.secureCookie = bool("console.secureCookie")
        if let secret = reader.string(forKey: ConfigKey("console.sessionSecret"), isSecret: true), !secret.isEmpty {
            if secret.utf8.count < 32 {
                problem("console.sessionSecret", "is shorter than 32 characters; use a long random value")
            } else {
                settings.sessionSecret = secret
            }
        }
        guard let operators = console["operators"] as? [String: Any], !operators.isEmpty else {
            problem("console.operators", "must map operator names to {role, password | passwordFile | passwordHash}")
            return settings
        }
        for name in operators.keys.sorted() {
            let path = "console.operators.\(name)"
            guard !name.isEmpty, name.allSatisfy({ $0.isLetter || $0.isNumber || "-_.@".contains($0) }) else {
                problem(path, "operator names may contain only letters, digits, '-', '_', '.' and '@'")
                continue
            }
            let rawRole = string("\(path).role") ?? ""
            guard let role = ConsoleRole(rawValue: rawRole) else {
                problem(
                    "\(path).role",
                    "\(rawRole.isEmpty ? "is required" : "unknown role '\(rawRole)'") (expected read-only or operator)")
                continue
            }
            guard let credential = operatorCredential(path) else { continue }
            settings.operators.append(ConsoleOperator(name: name, role: role, credential: credential))
        }
        return settings
    }

    private mutating func operatorCredential(_ path: String) -> ConsoleCredential? {
        var found: [ConsoleCredential] = []
        if let inline = reader.string(forKey: ConfigKey("\(path).password"), isSecret: true), !inline.isEmpty {
            found.append(.password(inline))
        }
        if let file = file("\(path).passwordFile") {
            guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
                problem("\(path).passwordFile", "can't be read as UTF-8 text")
                return nil
            }
            found.append(.password(text.trimmingCharacters(in: .whitespacesAndNewlines)))
        }
        if let text = reader.string(forKey: ConfigKey("\(path).passwordHash"), isSecret: true), !text.isEmpty {
            switch PasswordHash.parse(text) {
            case .success(let hash): found.append(.pbkdf2(hash))
            case .failure(let failure):
                problem("\(path).passwordHash", failure.message)
                return nil
            }
        }
        guard found.count == 1, let credential = found.first else {
            problem(
                path,
                found.isEmpty
                    ? "needs password (or its environment variable), passwordFile or passwordHash"
                    : "give only one of password, passwordFile and passwordHash")
            return nil
        }
        if case .password(let password) = credential, password.count < 12 {
            problem("\(path).password", "is shorter than 12 characters")
            return nil
        }
        return credential
    }
}
