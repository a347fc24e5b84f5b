import AppStoreServer
import ArgumentParser
import Foundation

/// `storekeeper verify`: verifies a JWS signed by the App Store and prints its payload.
struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Verify App Store signed data (JWS) and print its decoded payload as JSON.",
        discussion: """
            Verifies the certificate chain against the given roots, Apple's marker extensions, the ES256 \
            signature and, when given, bundle id, app Apple id and environment. For a notification the \
            nested signed fields are verified and decoded too. Exits 0 when valid; otherwise prints one \
            line naming the check that failed and exits 1.
            """
    )

    @Option(name: .customLong("root"), help: "Apple Root CA - G3 (DER or PEM); its fingerprint is checked.")
    var appleRoots: [String] = []

    @Option(name: .customLong("allow-root"), help: "Another root certificate to trust on purpose (a test CA).")
    var allowedRoots: [String] = []

    @Option(help: "The bundle id the payload must carry.")
    var bundleId: String?

    @Option(help: "The app's Apple id; required with --environment Production.")
    var appAppleId: Int64?

    @Option(help: "The environment the payload must come from: Production or Sandbox.")
    var environment: String?

    @Option(help: "When to validate the chain: signed (the payload's signedDate), now, or an ISO 8601 date.")
    var effectiveDate: String = "signed"

    @Flag(help: "Check revocation by OCSP (network) and validate at the current time.")
    var online = false

    @Option(help: "The payload type: auto, \(SignedPayloadKind.allCases.map(\.rawValue).joined(separator: ", ")).")
    var type: String = "auto"

    @Argument(help: "The JWS itself, @FILE to read it from a file, or - to read standard input.")
    var input: String

    func run() async throws {
        let token = try readToken()
        let verifier = try makeVerifier()
        let kind = try resolveKind(token)
        let json: Any
        do {
            json = try await verifyAndRender(token, as: kind, verifier: verifier)
        } catch let error as SignedDataVerificationError {
            standardError("invalid: \(error)")
            throw ExitCode(1)
        }
        let data = try JSONSerialization.data(
            withJSONObject: json, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        print(String(decoding: data, as: UTF8.self))
        for note in skippedChecks { standardError("note: \(note)") }
    }

    /// What was not checked because no expectation was given.
    var skippedChecks: [String] {
        var notes: [String] = []
        if bundleId == nil { notes.append("bundle id not checked (no --bundle-id)") }
        if environment == nil { notes.append("environment not checked (no --environment)") }
        if environment?.lowercased() == "production", appAppleId == nil {
            notes.append("app Apple id not checked (no --app-apple-id)")
        }
        if !online { notes.append("revocation not checked (offline; --online checks OCSP)") }
        return notes
    }

    func readToken() throws -> String {
        let text: String
        if input == "-" {
            text = String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
        } else if input.hasPrefix("@") {
            let path = String(input.dropFirst())
            guard let data = FileManager.default.contents(atPath: path) else {
                throw UsageError("cannot read \(path)")
            }
            text = String(decoding: data, as: UTF8.self)
        } else {
            text = input
        }
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func makeVerifier() throws -> SignedDataVerifier {
        let roots: TrustedRoots
        do {
            roots = try TrustedRoots(appleRootFiles: appleRoots, allowedRootFiles: allowedRoots)
        } catch {
            throw UsageError(error.description + (appleRoots.isEmpty && allowedRoots.isEmpty ? " (--root FILE)" : ""))
        }
        let expectedEnvironment = try environment.map(Self.parseEnvironment)
        if expectedEnvironment == .production, appAppleId == nil {
            throw UsageError("--app-apple-id is required with --environment Production")
        }
        let date: SignedDataVerifier.EffectiveDate
        switch effectiveDate {
        case "signed": date = .signingDate
        case "now": date = .currentTime
        default:
            guard let fixed = try? Date(effectiveDate, strategy: .iso8601) else {
                throw UsageError("--effective-date takes signed, now or an ISO 8601 date such as 2024-01-31T12:00:00Z")
            }
            date = .fixed(fixed)
        }
        if online, effectiveDate != "now", effectiveDate != "signed" {
            throw UsageError("--online validates at the current time; drop --effective-date")
        }
        do {
            return try SignedDataVerifier(
                configuration: .init(
                    trustedRoots: roots,
                    bundleId: bundleId,
                    appAppleId: appAppleId,
                    environment: expectedEnvironment,
                    effectiveDate: online ? .currentTime : date,
                    onlineChecks: online
                ),
                ocspTransport: online ? HTTPOCSPTransport() : nil
            )
        } catch {
            throw UsageError(error.description)
        }
    }

    static func parseEnvironment(_ text: String) throws -> Environment {
        switch text.lowercased() {
        case "production": return .production
        case "sandbox": return .sandbox
        default: throw UsageError("--environment takes Production or Sandbox, not \(text)")
        }
    }

    func resolveKind(_ token: String) throws -> SignedPayloadKind {
        if type != "auto" {
            guard let kind = SignedPayloadKind(rawValue: type) else {
                throw UsageError("--type takes auto or one of \(SignedPayloadKind.allCases.map(\.rawValue))")
            }
            return kind
        }
        // A token whose payload cannot even be read is verified as a transaction: the verifier then
        // reports precisely what is wrong with it.
        return SignedPayloadKind.guess(fromUnverifiedToken: token) ?? .transaction
    }

    /// Verifies `token` as `kind` and returns its payload as a JSON object; a notification's nested
    /// signed fields are replaced by their verified, decoded payloads.
    func verifyAndRender(_ token: String, as kind: SignedPayloadKind, verifier: SignedDataVerifier) async throws -> Any
    {
        switch kind {
        case .notification:
            _ = try await verifier.verifyNotification(token)
            var object = try Self.payloadObject(token)
            if var data = object["data"] as? [String: Any] {
                for field in ["signedTransactionInfo", "signedRenewalInfo"] {
                    if let nested = data[field] as? String { data[field] = try Self.payloadObject(nested) }
                }
                object["data"] = data
            }
            if var appData = object["appData"] as? [String: Any],
                let nested = appData["signedAppTransactionInfo"] as? String
            {
                appData["signedAppTransactionInfo"] = try Self.payloadObject(nested)
                object["appData"] = appData
            }
            return object
        case .transaction: _ = try await verifier.verify(token, as: JWSTransaction.self)
        case .renewalInfo: _ = try await verifier.verify(token, as: JWSRenewalInfo.self)
        case .appTransaction: _ = try await verifier.verify(token, as: AppTransaction.self)
        case .realtimeRequest: _ = try await verifier.verify(token, as: RealtimeRequest.self)
        }
        return try Self.payloadObject(token)
    }

    /// The JSON object a (verified) token's payload holds, exactly as signed.
    static func payloadObject(_ token: String) throws -> [String: Any] {
        let parts = token.split(separator: ".")
        guard parts.count == 3, let payload = Base64URL.decode(parts[1]),
            let object = try JSONSerialization.jsonObject(with: payload) as? [String: Any]
        else { throw UsageError("the payload is not a JSON object") }
        return object
    }
}

/// A mistake in the command line or the files it names: one line on standard error, exit code 2.
struct UsageError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

func standardError(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}
