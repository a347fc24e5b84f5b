import Foundation
import Logging
import Storekeeper
import StorekeeperServer
import StorekeeperStorage
import Testing
import Yams

/// Keeps docs/openapi.yaml true to the server: the same routes, a response for every operation, and
/// exactly the error codes the server emits; and readable by the tools that read OpenAPI documents.
@Suite struct OpenAPIDocumentTests {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    @Test func documentsExactlyTheRoutesTheRouterRegisters() async throws {
        let document = try OpenAPIDocument.load()
        let registered = try await Self.registeredRoutes()
        let documented = Set(document.operations.map(\.route))
        #expect(!registered.isEmpty)
        for route in registered.subtracting(documented).sorted() {
            Issue.record("the router registers \(route) but docs/openapi.yaml does not document it")
        }
        for route in documented.subtracting(registered).sorted() {
            Issue.record("docs/openapi.yaml documents \(route) but the router has no such route")
        }
    }

    /// The document is YAML to a YAML parser, not only to this file's line reader, and both read the
    /// same paths. Two descriptions with an unquoted ": " in them made it invalid YAML, which
    /// OpenAPI tools (viewers, client generators) refuse to read, while the line reader read on.
    @Test func isYAMLThatAParserReadsWithTheSamePaths() throws {
        let text = try String(
            contentsOf: Self.packageRoot.appendingPathComponent("docs/openapi.yaml"), encoding: .utf8)
        let parsed = try #require(try Yams.load(yaml: text) as? [String: Any])
        #expect((parsed["openapi"] as? String)?.hasPrefix("3.") == true)
        #expect(parsed["info"] is [String: Any])
        let paths = try #require(parsed["paths"] as? [String: Any])
        let lineReaderPaths = Set(
            try OpenAPIDocument.load().operations.compactMap { $0.route.split(separator: " ").last.map(String.init) })
        #expect(Set(paths.keys) == lineReaderPaths)
    }

    @Test func everyOperationHasAResponse() throws {
        let document = try OpenAPIDocument.load()
        #expect(!document.operations.isEmpty)
        for operation in document.operations where operation.responseStatuses.isEmpty {
            Issue.record("\(operation.route) documents no response")
        }
    }

    @Test func documentsExactlyTheErrorCodesTheServerEmits() throws {
        let document = try OpenAPIDocument.load()
        let emitted = try Self.emittedErrorCodes()
        #expect(emitted.contains("missing-api-key"))
        #expect(emitted.contains("ownership-conflict"))
        let documented = Set(document.errorCodes)
        #expect(documented.count == document.errorCodes.count, "ErrorCode lists a code twice")
        for code in documented.subtracting(emitted).sorted() {
            Issue.record("docs/openapi.yaml lists error code \(code), which the server never emits")
        }
        for code in emitted.subtracting(documented).sorted() {
            Issue.record("the server emits error code \(code), which docs/openapi.yaml does not list")
        }
    }

    /// "METHOD /path/{param}" for every route of a real application's router.
    static func registeredRoutes() async throws -> Set<String> {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("storekeeper-openapi-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let configuration = StorekeeperConfiguration(
            server: HTTPSettings(host: "127.0.0.1", port: 0),
            storageURL: directory.appendingPathComponent("storekeeper.sqlite").path,
            apiKeys: [ConfiguredAPIKey(name: "backend", scope: .secret, secret: "sk_test_0123456789abcdef0123")],
            apps: [],
            catalog: Catalog([])
        )
        let storage = try await StorageFactory.open(configuration.storageURL, logger: logger)
        let routes: Set<String>
        do {
            let application = try StorekeeperApplication(
                configuration: configuration, storage: storage, logger: logger)
            // A route per store (`{store}`) is documented once per store, as each reads its own body.
            routes = Set(
                application.makeRouter().routes.flatMap { route in
                    let path = route.path.description.replacingOccurrences(of: ":store", with: "{store}")
                    let paths =
                        path.contains("{store}")
                        ? Store.allCases.map { path.replacingOccurrences(of: "{store}", with: $0.pathSegment) } : [path]
                    return paths.map { OpenAPIDocument.route(method: route.method.rawValue, path: $0) }
                })
        } catch {
            try? await storage.close()
            throw error
        }
        try await storage.close()
        return routes
    }

    /// Every code the server puts in `{"error": {"code": …}}`: ``ErrorCode``'s cases, the one
    /// type every answer's code comes from.
    static func emittedErrorCodes() throws -> Set<String> {
        Set(ErrorCode.allCases.map(\.rawValue))
    }
}

/// What the tests need from docs/openapi.yaml, read line by line: the document keeps paths at two
/// spaces of indentation under `paths:`, methods at four, `responses:` at six with status codes at
/// eight, and the codes as a block list under `components.schemas.ErrorCode.enum`.
struct OpenAPIDocument {
    struct Operation {
        var route: String
        var responseStatuses: [String]
    }

    var operations: [Operation] = []
    var errorCodes: [String] = []

    static let methods: Set<String> = ["get", "put", "post", "delete", "patch", "head", "options", "trace"]

    static func load() throws -> OpenAPIDocument {
        let url = OpenAPIDocumentTests.packageRoot.appendingPathComponent("docs/openapi.yaml")
        return OpenAPIDocument(yaml: try String(contentsOf: url, encoding: .utf8))
    }

    /// `GET /v1/customers/{id}`; `:id` segments are written `{id}`.
    static func route(method: String, path: String) -> String {
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).map { segment in
            segment.hasPrefix(":") ? "{\(segment.dropFirst())}" : String(segment)
        }
        let normalized = segments.joined(separator: "/")
        return "\(method.uppercased()) \(normalized.hasPrefix("/") ? normalized : "/" + normalized)"
    }

    init(yaml: String) {
        var section: [String] = []  // the keys of the enclosing mappings, one per two spaces
        var path: String?
        var inOperation = false
        var inResponses = false
        var inErrorCodeEnum = false
        var blockScalarIndent: Int?  // lines deeper than this belong to a `|` or `>` text
        for rawLine in yaml.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = String(rawLine)
            let content = line.drop { $0 == " " }
            if content.isEmpty || content.hasPrefix("#") { continue }
            let indent = line.count - content.count
            if let textIndent = blockScalarIndent {
                if indent > textIndent { continue }
                blockScalarIndent = nil
            }
            if inErrorCodeEnum {
                if content.hasPrefix("- ") {
                    errorCodes.append(Self.unquoted(content.dropFirst(2)))
                    continue
                }
                inErrorCodeEnum = false
            }
            guard let colon = content.firstIndex(of: ":"), indent % 2 == 0 else { continue }
            let value = content[content.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            if value.hasPrefix("|") || value.hasPrefix(">") { blockScalarIndent = indent }
            let key = Self.unquoted(content[..<colon])
            let level = indent / 2
            section = Array(section.prefix(level)) + [key]
            guard section.first == "paths" else {
                if section == ["components", "schemas", "ErrorCode", "enum"] { inErrorCodeEnum = true }
                continue
            }
            switch level {
            case 1:
                path = key
                inOperation = false
                inResponses = false
            case 2:
                inOperation = Self.methods.contains(key)
                inResponses = false
                if inOperation, let path {
                    operations.append(Operation(route: Self.route(method: key, path: path), responseStatuses: []))
                }
            case 3:
                inResponses = inOperation && key == "responses"
            case 4 where inResponses:
                operations[operations.count - 1].responseStatuses.append(key)
            default:
                break
            }
        }
    }

    static func unquoted(_ text: some StringProtocol) -> String {
        var value = text.trimmingCharacters(in: .whitespaces)
        if value.count >= 2, let first = value.first, first == "\"" || first == "'", value.last == first {
            value = String(value.dropFirst().dropLast())
        }
        return value
    }
}
