// swift-tools-version: 6.1
import PackageDescription

// Benchmarks of Storekeeper, kept out of the main package so that its dependency graph (and CI)
// stays free of the benchmark tooling. Build and run from this folder; see README.md.
let package = Package(
    name: "StorekeeperBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "storekeeper", path: ".."),
        .package(url: "https://github.com/ordo-one/package-benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        // Already in Storekeeper's graph: customer-read seeds its databases through plain connections.
        .package(url: "https://github.com/vapor/sqlite-nio.git", from: "1.13.2"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        // Already in Storekeeper's graph: customer-read's load generator speaks HTTP over plain channels.
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
    ],
    targets: [
        // What the benchmarks' figures are computed with: medians, percentiles, seconds.
        .target(name: "BenchmarkFigures"),
        // The signed transaction, verifier and raw ECDSA inputs both benchmarks measure.
        .target(
            name: "VerifyFixture",
            dependencies: [
                .product(name: "AppStoreServer", package: "storekeeper"),
                .product(name: "StoreSimulator", package: "storekeeper"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
            ]
        ),
        // The load generators' HTTP/1.1 connections over plain SwiftNIO channels.
        .target(
            name: "LoadHTTP",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        // ordo-one suite for `swift package benchmark`: the plugin runs executable targets whose folder is
        // directly inside a folder named Benchmarks (this package).
        .executableTarget(
            name: "VerifyTransaction",
            dependencies: [
                "VerifyFixture",
                .product(name: "Benchmark", package: "package-benchmark"),
            ],
            path: "VerifyTransaction",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "package-benchmark")]
        ),
        // The hand-written JSON bodies (events, the customer view) next to the JSONEncoder each replaced.
        .executableTarget(
            name: "JSONBodies",
            dependencies: [
                .product(name: "Storekeeper", package: "storekeeper"),
                .product(name: "StorekeeperServer", package: "storekeeper"),
                .product(name: "AppStoreServer", package: "storekeeper"),
                .product(name: "Benchmark", package: "package-benchmark"),
            ],
            path: "JSONBodies",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "package-benchmark")]
        ),
        // How reading a customer's ledger for the share of a purchase spent grows with the ledger.
        .executableTarget(
            name: "LedgerReading",
            dependencies: [
                .product(name: "Storekeeper", package: "storekeeper"),
                .product(name: "Benchmark", package: "package-benchmark"),
            ],
            path: "LedgerReading",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "package-benchmark")]
        ),
        // Notification ingest over HTTP (verified, durable, processed) on SQLite and PostgreSQL, next
        // to the verifier's throughput on the same payloads.
        .executableTarget(
            name: "ingest-throughput",
            dependencies: [
                .product(name: "StorekeeperDemo", package: "storekeeper"),
                .product(name: "StorekeeperServer", package: "storekeeper"),
                .product(name: "StoreSimulator", package: "storekeeper"),
                .product(name: "AppStoreServer", package: "storekeeper"),
                .product(name: "StorekeeperStorage", package: "storekeeper"),
                .product(name: "Hummingbird", package: "hummingbird"),
                // The notifications are posted over plain SwiftNIO channels (ClosedLoopPoster).
                "LoadHTTP",
                "BenchmarkFigures",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                // --webhooks on PostgreSQL creates a fresh database for each of its two deployments.
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
        // GET /v1/customers/{id} at a fixed open-loop rate on 1,000,000 and 10,000 seeded customers,
        // on SQLite and PostgreSQL; the background jobs' queries timed on each.
        .executableTarget(
            name: "customer-read",
            dependencies: [
                "LoadHTTP",
                "BenchmarkFigures",
                .product(name: "StorekeeperDemo", package: "storekeeper"),
                .product(name: "StorekeeperServer", package: "storekeeper"),
                .product(name: "StorekeeperStorage", package: "storekeeper"),
                .product(name: "Storekeeper", package: "storekeeper"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "SQLiteNIO", package: "sqlite-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        // One process, one thread: verifier and raw P-256 rates side by side, summary line last.
        .executableTarget(
            name: "verify-throughput",
            dependencies: ["VerifyFixture", "BenchmarkFigures"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
