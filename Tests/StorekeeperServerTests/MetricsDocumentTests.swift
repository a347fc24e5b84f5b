import Foundation
import Testing

/// Keeps the metrics table in docs/operations.md true to the server: every metric `ServerMetrics`
/// can emit is described there, and the table describes no other.
@Suite struct MetricsDocumentTests {
    @Test func operationsDocumentsExactlyTheMetricsTheServerEmits() throws {
        let root = OpenAPIDocumentTests.packageRoot
        let source = try String(
            contentsOf: root.appendingPathComponent("Sources/StorekeeperServer/HTTP/ServerMetrics.swift"),
            encoding: .utf8)
        let operations = try String(
            contentsOf: root.appendingPathComponent("docs/operations.md"), encoding: .utf8)
        let emitted = Self.names(in: source, after: #"label: ""#)
        // The table's rows begin with the metric's name in backticks.
        let documented = Self.names(in: operations, after: "\n| `")
        #expect(emitted.count >= 10, "\(emitted)")
        for name in emitted.subtracting(documented).sorted() {
            Issue.record("the server emits \(name), which docs/operations.md's metrics table does not describe")
        }
        for name in documented.subtracting(emitted).sorted() {
            Issue.record("docs/operations.md's metrics table describes \(name), which the server never emits")
        }
    }

    /// The `storekeeper_…` names that follow `prefix` in `text`.
    static func names(in text: String, after prefix: String) -> Set<String> {
        var names: Set<String> = []
        var rest = text[...]
        while let found = rest.range(of: prefix + "storekeeper_") {
            let start = text.index(found.upperBound, offsetBy: -"storekeeper_".count)
            let end = text[start...].firstIndex { !($0.isLetter || $0.isNumber || $0 == "_") } ?? text.endIndex
            names.insert(String(text[start..<end]))
            rest = text[end...]
        }
        return names
    }
}
