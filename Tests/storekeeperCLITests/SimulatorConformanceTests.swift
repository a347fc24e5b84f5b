import Foundation
import TestSupport
import Testing

/// The conformance suite in `Conformance/`: Apple's App Store Server Library and Google's API client
/// with google-auth (Python, from PyPI) driving `storekeeper simulator` over HTTP only, as a user's
/// test suite in another language would.
///
/// It runs with the Python named by `STOREKEEPER_CONFORMANCE_PYTHON` (a virtual environment with
/// `Conformance/requirements.txt` installed; `.ci/run` makes one) and is skipped, saying why, where
/// that variable is unset or that Python lacks the packages.
@Suite struct SimulatorConformanceTests {
    /// The package's root directory (this file is `Tests/storekeeperCLITests/…`).
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// The interpreter to use, or why the suite cannot run.
    static let python: Result<String, SkipReason> = {
        guard let python = ProcessInfo.processInfo.environment["STOREKEEPER_CONFORMANCE_PYTHON"], !python.isEmpty
        else {
            return .failure(
                SkipReason(
                    "STOREKEEPER_CONFORMANCE_PYTHON is not set (a Python with Conformance/requirements.txt; bash .ci/run makes one)"
                ))
        }
        let probe: SpawnedProcess
        do {
            probe = try SpawnedProcess(
                URL(fileURLWithPath: python),
                ["-c", "import appstoreserverlibrary, googleapiclient, google.auth, pytest"])
        } catch {
            return .failure(SkipReason("STOREKEEPER_CONFORMANCE_PYTHON (\(python)) cannot be run: \(error)"))
        }
        // A static's initializer cannot await; the probe takes about a second.
        while probe.isRunning { usleep(10_000) }
        guard probe.termination == .exited(0) else {
            return .failure(
                SkipReason(
                    "\(python) lacks the packages of Conformance/requirements.txt (pip install -r Conformance/requirements.txt)"
                ))
        }
        return .success(python)
    }()

    struct SkipReason: Error {
        var text: String
        init(_ text: String) { self.text = text }
    }

    static var available: Bool { (try? python.get()) != nil }
    static var skipReason: Comment {
        if case .failure(let reason) = python { return Comment(rawValue: reason.text) }
        return ""
    }

    @Test(.enabled(if: available, skipReason), .timeLimit(.minutes(10)))
    func appleAndGoogleClientLibrariesAgainstTheSimulator() async throws {
        let python = try Self.python.get()
        guard let executable = CLI.executable else { throw CLI.MissingExecutable() }
        var environment = ProcessInfo.processInfo.environment
        environment["STOREKEEPER_BINARY"] = executable.path
        environment["PYTHONDONTWRITEBYTECODE"] = "1"
        let result = try await ChildProcess.run(
            URL(fileURLWithPath: python), ["-m", "pytest", "Conformance", "-q"], environment: environment,
            currentDirectory: Self.packageRoot, timeLimit: 540)
        let text = result.standardOutput + result.standardError
        let summary = result.standardOutput.split(separator: "\n").last.map(String.init) ?? ""
        #expect(result.status == 0, "pytest failed:\n\(text)")
        #expect(summary.contains(" passed"), "pytest's summary: \(summary)\n\(text)")
    }
}
