import AppStoreServer
import Foundation
import StoreSimulator
import TestSupport
import Testing

/// The third-party vectors (see ``ThirdPartyVectors``).
enum Vectors {
    static var available: Bool { ThirdPartyVectors.available }
    static func path(_ relative: String) -> String { ThirdPartyVectors.path(relative) }
    static var appleRoot: String { path("apple-real/AppleRootCA-G3.cer") }
    static var realFiles: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path("apple-real"))) ?? []).filter {
            $0.hasSuffix(".jws")
        }
        .sorted()
    }
}

@Suite struct VerifyCommandTests {
    @Test(.enabled(if: Vectors.available, "no ../shared/vectors (a user's clone)"), arguments: Vectors.realFiles)
    func everyRealVectorVerifiesWithThePinnedRoot(file: String) async throws {
        let result = try await CLI.run([
            "verify", "--root", Vectors.appleRoot, "@" + Vectors.path("apple-real/" + file),
        ])
        #expect(result.status == 0, "\(result.standardError)")
        let object = try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any]
        #expect(object?["signedDate"] is NSNumber)
        #expect(result.standardError.contains("note: bundle id not checked (no --bundle-id)"))
        #expect(result.standardError.contains("note: environment not checked (no --environment)"))
        if file.contains("notification"), file.contains("DID_RENEW") {
            // Nested signed fields are verified and decoded in place.
            let data = object?["data"] as? [String: Any]
            let transaction = data?["signedTransactionInfo"] as? [String: Any]
            #expect(transaction?["transactionId"] as? String == "2000001024998954")
            #expect(data?["signedRenewalInfo"] is [String: Any])
        }
    }

    @Test(.enabled(if: Vectors.available, "no ../shared/vectors (a user's clone)"))
    func identityChecksAndStandardInput() async throws {
        let file = Vectors.path("apple-real/12-transaction-Consumable.jws")
        let token = try String(contentsOfFile: file, encoding: .utf8)
        let good = try await CLI.run(
            [
                "verify", "--root", Vectors.appleRoot, "--bundle-id", "com.jrjj.keysns", "--environment", "Production",
                "--app-apple-id", "1601830814", "-",
            ], standardInput: token)
        #expect(good.status == 0, "\(good.standardError)")
        #expect(!good.standardError.contains("bundle id not checked"))
        let wrong = try await CLI.run(
            [
                "verify", "--root", Vectors.appleRoot, "--bundle-id", "com.other", "--environment", "Production",
                "--app-apple-id", "1", "@" + file,
            ])
        #expect(wrong.status == 1)
        #expect(
            wrong.standardError
                == "invalid: bundle-id-mismatch: bundle id is \"com.jrjj.keysns\"; expected \"com.other\"\n")
        #expect(wrong.standardOutput.isEmpty)
        let sandbox = try await CLI.run(["verify", "--root", Vectors.appleRoot, "--environment", "Sandbox", "@" + file])
        #expect(sandbox.status == 1)
        #expect(sandbox.standardError.hasPrefix("invalid: environment-mismatch: "))
        let now = try await CLI.run(["verify", "--root", Vectors.appleRoot, "--effective-date", "now", "@" + file])
        #expect(now.status == 1)
        #expect(now.standardError.hasPrefix("invalid: untrusted-chain: "))
        #expect(now.standardError.contains("the leaf certificate expired at"))
    }

    @Test(.enabled(if: Vectors.available, "no ../shared/vectors (a user's clone)"))
    func libraryTestVectors() async throws {
        let testCA = Vectors.path("apple-library-test/testCA.der")
        let base = ["verify", "--allow-root", testCA, "--bundle-id", "com.example", "--environment", "Sandbox"]
        #expect(try await CLI.run(base + ["@" + Vectors.path("apple-library-test/testNotification")]).status == 0)
        #expect(try await CLI.run(base + ["@" + Vectors.path("apple-library-test/transactionInfo")]).status == 0)
        #expect(try await CLI.run(base + ["@" + Vectors.path("apple-library-test/renewalInfo")]).status == 0)
        let wrong = try await CLI.run(base + ["@" + Vectors.path("apple-library-test/wrongBundleId")])
        #expect(wrong.status == 1)
        #expect(wrong.standardError.hasPrefix("invalid: bundle-id-mismatch: "))
        let missing = try await CLI.run(base + ["@" + Vectors.path("apple-library-test/missingX5CHeaderClaim")])
        #expect(missing.status == 1)
        #expect(missing.standardError == "invalid: malformed-header: the header has no x5c certificate chain\n")
        // The test CA is not Apple's root: refused as --root.
        let pinned = try await CLI.run([
            "verify", "--root", testCA, "@" + Vectors.path("apple-library-test/testNotification"),
        ])
        #expect(pinned.status == 2)
        #expect(pinned.standardError.contains("is not Apple Root CA - G3"))
    }

    @Test func generatedChainTokensAndTampering() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("storekeeper-cli-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let chain = try TestCertificateChain()
        let rootPath = directory.appendingPathComponent("root.der").path
        try chain.writeRoot(to: rootPath)
        let renewal = JWSRenewalInfo(
            autoRenewProductId: "pro.monthly", autoRenewStatus: .on, environment: .sandbox,
            originalTransactionId: "1000", productId: "pro.monthly", signedDate: Date())
        let token = try AppStoreSigner(chain: chain).sign(renewal)
        let good = try await CLI.run(["verify", "--allow-root", rootPath, "--environment", "Sandbox", token])
        #expect(good.status == 0, "\(good.standardError)")
        #expect(good.standardOutput.contains("\"autoRenewProductId\" : \"pro.monthly\""))
        var parts = token.split(separator: ".").map(String.init)
        parts[2] = String(parts[2].reversed())
        let tampered = try await CLI.run(["verify", "--allow-root", rootPath, parts.joined(separator: ".")])
        #expect(tampered.status == 1)
        #expect(tampered.standardError.hasPrefix("invalid: "))
        #expect(tampered.standardError.split(separator: "\n").count == 1)
        let garbage = try await CLI.run(["verify", "--allow-root", rootPath, "not-a-token"])
        #expect(
            garbage.standardError
                == "invalid: malformed-jws: a compact JWS has 3 dot-separated parts; this input has 1\n")
        let noRoot = try await CLI.run(["verify", token])
        #expect(noRoot.status == 2)
        #expect(noRoot.standardError.hasPrefix("error: no trusted root configured"))
        let production = try await CLI.run(["verify", "--allow-root", rootPath, "--environment", "Production", token])
        #expect(production.status == 2)
        #expect(production.standardError == "error: --app-apple-id is required with --environment Production\n")
    }
}
