import Foundation
import Storekeeper
import StorekeeperServer
import Testing

/// The console's part of the configuration: operators with a password from the file, the
/// environment or a file, or a PBKDF2 hash; every wrong value explained by its key; no secret in
/// what is shown.
@Suite struct ConsoleConfigurationTests {
    /// `correct horse battery`, hashed as Python's `hashlib.pbkdf2_hmac` does.
    static let hash =
        "pbkdf2-sha256$210000$c3RvcmVrZWVwZXItdGVzdC1zYWx0$IOFMFzrI8juoDBkCsVRbzmAi9m7UjoiOy8uMDD14JD4="

    static func configuration(console: String) -> String {
        let valid = ConfigurationTests.valid
        let end = valid.lastIndex(of: "}") ?? valid.endIndex
        return String(valid[..<end]) + ", \"console\": \(console)}"
    }

    @Test func operatorsLoadWithTheirRolesAndCredentials() async throws {
        let folder = try ConfigurationTests.Folder()
        defer { folder.remove() }
        try "a password kept in a file\n".write(
            to: folder.url.appendingPathComponent("viewer.password"), atomically: true, encoding: .utf8)
        let path = try folder.write(
            Self.configuration(
                console: """
                    {"sessionLifetime": 1800, "secureCookie": true,
                     "operators": {
                       "alice": {"role": "operator", "passwordHash": "\(Self.hash)"},
                       "bob": {"role": "read-only", "passwordFile": "viewer.password"},
                       "carol": {"role": "operator"}}}
                    """))
        let configuration = try await ConfigurationLoader.load(
            path: path,
            environment: [
                "API_KEYS_APP_SECRET": "read-only-secret-0123456789",
                "CONSOLE_OPERATORS_CAROL_PASSWORD": "carol's long password",
                "CONSOLE_SESSION_SECRET": "0123456789abcdef0123456789abcdef-session",
            ])
        let console = configuration.console
        #expect(console.isEnabled)
        #expect(console.sessionLifetime == 1800)
        #expect(console.secureCookie == true)
        #expect(console.sessionSecret == "0123456789abcdef0123456789abcdef-session")
        let byName = Dictionary(uniqueKeysWithValues: console.operators.map { ($0.name, $0) })
        #expect(byName["alice"]?.role == .operator)
        #expect(byName["alice"]?.accepts(password: "correct horse battery") == true)
        #expect(byName["alice"]?.accepts(password: "correct horse batterY") == false)
        #expect(byName["bob"]?.role == .readOnly)
        #expect(byName["bob"]?.accepts(password: "a password kept in a file") == true)
        #expect(byName["carol"]?.accepts(password: "carol's long password") == true)
        #expect(byName["carol"]?.accepts(password: "") == false)
        for person in console.operators {
            #expect(!"\(person)".contains("password kept"))
            #expect(!"\(person)".contains("carol's long"))
            #expect(!"\(person.credential)".contains("carol's long"))
        }
    }

    @Test func noConsoleSectionMeansNoConsole() async throws {
        let folder = try ConfigurationTests.Folder()
        defer { folder.remove() }
        let configuration = try await ConfigurationLoader.load(
            path: try folder.write(ConfigurationTests.valid),
            environment: ["API_KEYS_APP_SECRET": "read-only-secret-0123456789"])
        #expect(!configuration.console.isEnabled)
    }

    @Test func wrongValuesAreExplainedByTheirKey() async throws {
        let folder = try ConfigurationTests.Folder()
        defer { folder.remove() }
        let path = try folder.write(
            Self.configuration(
                console: """
                    {"sessionLifetime": -5, "secureCookie": "maybe", "sessionSecret": "too-short-secret",
                     "operators": {
                       "admin": {"role": "superuser", "password": "long enough password"},
                       "shorty": {"role": "operator", "password": "hunter2"},
                       "both": {"role": "operator", "password": "long enough password", "passwordHash": "\(Self.hash)"},
                       "none": {"role": "read-only"},
                       "weak": {"role": "read-only", "passwordHash": "pbkdf2-sha256$1000$c2FsdA==$AAAA"},
                       "bad name!": {"role": "operator", "password": "long enough password"}}}
                    """))
        do {
            _ = try await ConfigurationLoader.load(
                path: path, environment: ["API_KEYS_APP_SECRET": "read-only-secret-0123456789"])
            Issue.record("a broken console configuration loaded")
        } catch let error as ConfigurationError {
            let paths = error.problems.map(\.path)
            for expected in [
                "console.sessionLifetime", "console.secureCookie", "console.sessionSecret",
                "console.operators.admin.role", "console.operators.shorty.password", "console.operators.both",
                "console.operators.none", "console.operators.weak.passwordHash", "console.operators.bad name!",
            ] {
                #expect(paths.contains(expected), "no problem reported for \(expected): \(error)")
            }
            #expect(!error.description.contains("hunter2"))
            #expect(!error.description.contains("long enough password"))
            #expect(!error.description.contains("too-short-secret"))
        }
    }
}
