import Crypto
import Foundation
import StoreCore
import Synchronization

/// A signed-in operator, as read from a valid session cookie.
struct ConsoleSession: Sendable, Hashable {
    var operatorName: String
    var role: ConsoleRole
    var expiresAt: Date
    /// The session's random id: what sign-out revokes and what the CSRF token is bound to.
    var nonce: String
    /// The token every action must carry (a hidden form field), bound to this session.
    var csrfToken: String

    var canAct: Bool { role == .operator }
}

/// Issues and checks the console's session cookies: `<name>.<expiry ms>.<nonce>.<signature>`,
/// signed with HMAC-SHA256, so any instance holding the same key reads them and nothing is
/// stored. Each request looks the operator up in the configuration again, so an operator removed
/// from it (or whose role changed) is out at the next start. Sign-out revokes the session on this
/// instance (and the browser drops the cookie).
final class ConsoleSessions: Sendable {
    static let cookieName = "storekeeper_console"

    let operators: [String: ConsoleOperator]
    let lifetime: TimeInterval
    let clock: any WallClock
    private let key: SymmetricKey
    private let randomBytes: @Sendable (Int) -> [UInt8]
    /// Checked against the password given for an unknown name, so that an unknown name costs what
    /// a known one does (a PBKDF2 derivation when operators have hashes).
    private let decoy: ConsoleCredential
    /// Signed-out sessions' nonces until they would have expired anyway.
    private let revoked = Mutex<[String: Date]>([:])

    init(settings: ConsoleSettings, clock: any WallClock, randomBytes: @escaping @Sendable (Int) -> [UInt8]) {
        operators = Dictionary(settings.operators.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        lifetime = settings.sessionLifetime
        let iterations = settings.operators.compactMap { person -> Int? in
            if case .pbkdf2(let hash) = person.credential { return hash.iterations }
            return nil
        }.max()
        decoy =
            iterations.map {
                .pbkdf2(PasswordHash(iterations: $0, salt: Data(count: 16), derivedKey: Data(count: 32)))
            } ?? .password(String(repeating: "x", count: 32))
        self.clock = clock
        self.randomBytes = randomBytes
        if let secret = settings.sessionSecret {
            key = SymmetricKey(data: SHA256.hash(data: Data(secret.utf8)))
        } else {
            key = SymmetricKey(data: randomBytes(32))
        }
    }

    /// System randomness, the default.
    static let systemRandomBytes: @Sendable (Int) -> [UInt8] = { count in
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }

    /// Where password checks run, one at a time. A PBKDF2 check is 210,000 rounds or more, a
    /// tenth of a second of a core or so: on the request's event loop, a few sign-in attempts at
    /// once (no account needed) held every connection on those loops, store webhooks included,
    /// until they were done. Here they queue behind each other on one thread of their own.
    static let passwordChecks = DispatchQueue(label: "storekeeper.console.password-checks")

    /// The operator these credentials sign in, or nil. Unknown names cost a password check too.
    func authenticate(name: String, password: String) async -> ConsoleOperator? {
        await withCheckedContinuation { continuation in
            Self.passwordChecks.async {
                continuation.resume(returning: self.checkCredentials(name: name, password: password))
            }
        }
    }

    private func checkCredentials(name: String, password: String) -> ConsoleOperator? {
        guard let candidate = operators[name] else {
            _ = decoy.accepts(password)
            return nil
        }
        return candidate.accepts(password: password) ? candidate : nil
    }

    /// A new session's cookie value and the session it opens.
    func open(for person: ConsoleOperator) -> (cookie: String, session: ConsoleSession) {
        let nonce = Hex.encode(randomBytes(18))
        let expiry = clock.now().addingTimeInterval(lifetime)
        let payload =
            "\(Base64URL.encode(Data(person.name.utf8))).\(Int64(expiry.timeIntervalSince1970 * 1000)).\(nonce)"
        let cookie = "\(payload).\(sign(payload))"
        let session = ConsoleSession(
            operatorName: person.name, role: person.role, expiresAt: expiry, nonce: nonce, csrfToken: csrf(nonce))
        return (cookie, session)
    }

    /// The session a cookie value proves, or nil: forged, expired, signed out, or its operator
    /// no longer configured.
    func session(cookie: String) -> ConsoleSession? {
        let parts = cookie.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 4 else { return nil }
        let payload = parts[0..<3].joined(separator: ".")
        guard constantTimeEqual(Array(sign(payload).utf8), Array(parts[3].utf8)) else { return nil }
        guard let nameData = Base64URL.decode(parts[0]), let name = String(data: nameData, encoding: .utf8),
            let milliseconds = Int64(parts[1]), let person = operators[name]
        else { return nil }
        let expiry = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
        let now = clock.now()
        guard now < expiry else { return nil }
        let nonce = parts[2]
        let isRevoked = revoked.withLock { revoked in
            revoked = revoked.filter { $0.value > now }
            return revoked[nonce] != nil
        }
        guard !isRevoked else { return nil }
        return ConsoleSession(
            operatorName: person.name, role: person.role, expiresAt: expiry, nonce: nonce, csrfToken: csrf(nonce))
    }

    /// Ends the session here: its cookie is refused from now on.
    func revoke(_ session: ConsoleSession) {
        revoked.withLock { $0[session.nonce] = session.expiresAt }
    }

    /// Whether `token` is the session's CSRF token.
    func checkCSRF(_ token: String?, for session: ConsoleSession) -> Bool {
        guard let token else { return false }
        return constantTimeEqual(Array(token.utf8), Array(session.csrfToken.utf8))
    }

    private func sign(_ payload: String) -> String {
        Base64URL.encode(Data(HMAC<SHA256>.authenticationCode(for: Data(payload.utf8), using: key)))
    }

    private func csrf(_ nonce: String) -> String { sign("csrf:\(nonce)") }
}
