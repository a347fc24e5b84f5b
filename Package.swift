// swift-tools-version: 6.1
import PackageDescription

let strictSwift6: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "storekeeper",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "storekeeper", targets: ["storekeeper"]),
        .library(name: "AppStoreServer", targets: ["AppStoreServer"]),
        .library(name: "GooglePlay", targets: ["GooglePlay"]),
        .library(name: "Storekeeper", targets: ["Storekeeper"]),
        .library(name: "StorekeeperStorage", targets: ["StorekeeperStorage"]),
        .library(name: "StorekeeperServer", targets: ["StorekeeperServer"]),
        .library(name: "StoreSimulator", targets: ["StoreSimulator"]),
        .library(name: "StorekeeperDemo", targets: ["StorekeeperDemo"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        // Storage: one SQL implementation over SQLKit, with SQLite and PostgreSQL drivers.
        .package(url: "https://github.com/vapor/sql-kit.git", from: "3.36.0"),
        .package(url: "https://github.com/vapor/sqlite-kit.git", from: "4.5.2"),
        .package(url: "https://github.com/vapor/sqlite-nio.git", from: "1.13.2"),
        .package(url: "https://github.com/vapor/postgres-kit.git", from: "2.17.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-configuration.git", from: "1.4.0"),
        .package(url: "https://github.com/apple/swift-system.git", from: "1.8.1"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        // Tests only: docs/openapi.yaml read by a real YAML parser.
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.2.2"),
    ],
    targets: [
        // Primitives shared by the store modules (clock, base64url, retry policy, paging, check failures, quotas).
        .target(name: "StoreCore", swiftSettings: strictSwift6),
        // Store modules: wire formats and APIs of one store each; they know nothing of the domain.
        .target(
            name: "AppStoreServer",
            dependencies: [
                "StoreCore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ],
            swiftSettings: strictSwift6
        ),
        .target(
            name: "GooglePlay",
            dependencies: [
                "StoreCore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ],
            swiftSettings: strictSwift6
        ),
        // The store-neutral domain: no I/O.
        .target(name: "Storekeeper", dependencies: ["StoreCore"], swiftSettings: strictSwift6),
        .target(
            name: "StorekeeperStorage",
            dependencies: [
                "Storekeeper", "StoreCore",
                .product(name: "SQLKit", package: "sql-kit"),
                .product(name: "SQLiteKit", package: "sqlite-kit"),
                .product(name: "SQLiteNIO", package: "sqlite-nio"),
                .product(name: "PostgresKit", package: "postgres-kit"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSwift6
        ),
        .target(
            name: "StorekeeperServer",
            dependencies: [
                "StorekeeperStorage", "AppStoreServer", "GooglePlay",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            swiftSettings: strictSwift6
        ),
        // Fake stores on loopback, and the certificate toolkit they sign with.
        .target(
            name: "StoreSimulator",
            dependencies: [
                "AppStoreServer", "GooglePlay",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                // The request parts the simulator's arrival stamp sees on the event loop.
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ],
            swiftSettings: strictSwift6
        ),
        .executableTarget(
            name: "storekeeper",
            dependencies: [
                "AppStoreServer", "StorekeeperServer", "StorekeeperStorage", "StoreSimulator", "StorekeeperDemo",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ],
            swiftSettings: strictSwift6
        ),
        // A server wired to the store simulator: `storekeeper demo` and the end-to-end tests.
        .target(
            name: "StorekeeperDemo",
            dependencies: [
                "StorekeeperServer", "StorekeeperStorage", "StoreSimulator", "Storekeeper",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Hummingbird", package: "hummingbird"),
            ],
            swiftSettings: strictSwift6
        ),
        // Helpers shared by the test targets (third-party vector location, a seeded RNG).
        .target(
            name: "TestSupport",
            dependencies: [
                "StorekeeperStorage", .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/TestSupport", swiftSettings: strictSwift6
        ),
        .testTarget(
            name: "AppStoreServerTests",
            dependencies: ["AppStoreServer", "StoreSimulator", "TestSupport"],
            swiftSettings: strictSwift6
        ),
        .testTarget(
            name: "StorekeeperServerTests",
            dependencies: [
                "StorekeeperServer", "StorekeeperStorage", "StoreSimulator", "Storekeeper", "AppStoreServer",
                "StorekeeperDemo", "GooglePlay", "TestSupport",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Yams", package: "Yams"),
            ],
            swiftSettings: strictSwift6
        ),
        .testTarget(
            name: "StorekeeperTests",
            dependencies: ["Storekeeper", "TestSupport"],
            swiftSettings: strictSwift6
        ),
        .testTarget(
            name: "StorekeeperStorageTests",
            dependencies: [
                "StorekeeperStorage", "Storekeeper", "TestSupport",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSwift6
        ),
        .testTarget(
            name: "StoreSimulatorTests",
            dependencies: [
                "StoreSimulator", "AppStoreServer",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Hummingbird", package: "hummingbird"),
            ],
            swiftSettings: strictSwift6
        ),
        .testTarget(
            name: "GooglePlayTests",
            dependencies: [
                "GooglePlay", "StoreSimulator",
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ],
            swiftSettings: strictSwift6
        ),
        .testTarget(
            name: "storekeeperCLITests",
            dependencies: ["storekeeper", "StoreSimulator", "AppStoreServer", "TestSupport"],
            swiftSettings: strictSwift6
        ),
    ],
    swiftLanguageModes: [.v6]
)
