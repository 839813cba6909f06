// swift-tools-version:6.1
import PackageDescription

/// A product of a package only the server (and its tests and tools) use: built, and
/// fetched, with the `Server` trait, which is on by default. An app that adds the kit
/// with `traits: []` fetches none of them (docs/client-kit.md, "Adding it").
func server(_ product: String, _ package: String) -> Target.Dependency {
    .product(name: product, package: package, condition: .when(traits: ["Server"]))
}

let package = Package(
    name: "roboscope",
    // The kit's floor (Duration, AsyncStream.makeStream): iOS 16, macOS 13; Linux has no
    // platform entry. The server targets run on Linux only.
    platforms: [.macOS(.v13), .iOS(.v16)],
    products: [
        .executable(name: "roboscope", targets: ["roboscope"]),
        // The Swift client kit: what an app adds with one package line. It builds no
        // server module, no Hummingbird and none of our C libraries (docs/client-kit.md).
        .library(name: "RoboscopeKit", targets: ["RoboscopeKit"]),
        // The kit's test doubles (InMemoryService, ManualClock), for an app's tests only.
        .library(name: "RoboscopeKitTesting", targets: ["RoboscopeKitTesting"]),
        .executable(name: "roboscope-client", targets: ["roboscope-client"]),
    ],
    traits: [
        .trait(
            name: "Server",
            description: "The service, its tools and tests; off for an app that wants RoboscopeKit alone"),
        .default(enabledTraits: ["Server"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        // JWT and JWK Set verification (ES256, RS256, EdDSA, HS256): docs/security.md says why.
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.7.1"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        // RoboscopeKit's offline store: SQLite on every platform (docs/client-kit.md says why).
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        // zlib (the system's libz) for gzip and deflate on HTTP: docs/compression.md.
        .package(url: "https://github.com/adam-fowler/compress-nio.git", from: "1.5.0"),
        // `swift package generate-documentation` for RoboscopeKit's DocC pages.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        // Tracing: spans through swift-distributed-tracing's API, exported by swift-otel over
        // OTLP/HTTP when OTEL_EXPORTER_OTLP_ENDPOINT is set (docs/operations.md, "Tracing").
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
        .package(url: "https://github.com/swift-otel/swift-otel.git", from: "1.6.0", traits: ["OTLPHTTP"]),
    ],
    targets: [
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        .systemLibrary(
            name: "CHiredis",
            pkgConfig: "hiredis",
            providers: [.apt(["libhiredis-dev"])]
        ),
        .systemLibrary(name: "CLinuxSystem"),
        // The system's zlib, for permessage-deflate in the WebSocket codec (the server's
        // gateway and the kit's Linux socket transport): docs/websocket.md, "Compression".
        // No pkg-config: zlib's header and library are where every compiler looks (Debian's
        // zlib1g-dev, Apple's SDKs), and an app adding the kit sees no pkg-config warning.
        .systemLibrary(
            name: "CZlib",
            providers: [.apt(["zlib1g-dev"])]
        ),
        // The system's OpenSSL, for `https://` and `wss://` in the kit's Linux socket
        // transports (docs/client-kit.md, "Transports"). No pkg-config, like zlib: Debian's
        // libssl-dev puts its headers and libraries where every compiler looks.
        .systemLibrary(
            name: "COpenSSL",
            providers: [.apt(["libssl-dev"])]
        ),
        // Marker geometry and distance ticks: pure, shared by the server and RoboscopeKit.
        .target(name: "RoboscopeGeometry"),
        // The wire vocabulary the server and the kit share (JSONValue): no dependencies.
        .target(name: "RoboscopeWire"),
        // Verifiable history's pure parts (RFC 9162's tree and proofs, signed notes,
        // checkpoints): shared by the server and RoboscopeKit's verifier.
        .target(
            name: "RoboscopeProofs",
            dependencies: ["RoboscopeWire", .product(name: "Crypto", package: "swift-crypto")]),
        .target(name: "RoboscopeDomain", dependencies: ["RoboscopeGeometry", "RoboscopeWire"]),
        .target(
            name: "RoboscopeAuth",
            dependencies: [
                "RoboscopeDomain",
                "RoboscopeWire",
                .product(name: "Crypto", package: "swift-crypto"),
                server("JWTKit", "jwt-kit"),
                server("Logging", "swift-log"),
                server("Metrics", "swift-metrics"),
            ]
        ),
        .target(
            name: "WebSocketCodec",
            dependencies: ["CZlib", .product(name: "Crypto", package: "swift-crypto")]
        ),
        // Series labelled by tenant, with a bound on how many tenants get a label; a write's
        // trace context as the tracer sees it.
        .target(
            name: "RoboscopeMetrics",
            dependencies: [
                "RoboscopeWire", server("Metrics", "swift-metrics"), server("Tracing", "swift-distributed-tracing"),
            ]),
        .target(
            name: "BlockingPool",
            dependencies: [
                "RoboscopeMetrics",
                server("Logging", "swift-log"),
                server("Metrics", "swift-metrics"),
                server("ServiceLifecycle", "swift-service-lifecycle"),
            ]
        ),
        .target(
            name: "RoboscopeRedis",
            dependencies: [
                "CHiredis",
                "RoboscopeMetrics",
                "RoboscopeDomain",
                "RoboscopeProofs",
                "BlockingPool",
                server("Logging", "swift-log"),
                server("ServiceLifecycle", "swift-service-lifecycle"),
                server("Tracing", "swift-distributed-tracing"),
            ]
        ),
        .target(
            name: "RoboscopePostgres",
            dependencies: [
                "CLibPQ",
                "BlockingPool",
                "RoboscopeMetrics",
                "RoboscopeDomain",
                "RoboscopeProofs",
                server("Logging", "swift-log"),
                server("Metrics", "swift-metrics"),
                server("ServiceLifecycle", "swift-service-lifecycle"),
                server("Tracing", "swift-distributed-tracing"),
            ]
        ),
        .target(
            name: "RoboscopeHTTP",
            dependencies: [
                "BlockingPool",
                "RoboscopeMetrics",
                "RoboscopeAuth",
                "RoboscopeDomain",
                "RoboscopePostgres",
                "RoboscopeProofs",
                "RoboscopeRedis",
                "RoboscopeWire",
                server("CompressNIO", "compress-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                server("Hummingbird", "hummingbird"),
                server("Logging", "swift-log"),
                server("Prometheus", "swift-prometheus"),
                server("ServiceLifecycle", "swift-service-lifecycle"),
                server("Tracing", "swift-distributed-tracing"),
            ]
        ),
        .target(
            name: "RoboscopeGateway",
            dependencies: [
                "BlockingPool",
                "RoboscopeMetrics",
                "CLinuxSystem",
                "RoboscopeAuth",
                "WebSocketCodec",
                "RoboscopeDomain",
                "RoboscopePostgres",
                "RoboscopeRedis",
                server("Logging", "swift-log"),
                server("Metrics", "swift-metrics"),
                server("ServiceLifecycle", "swift-service-lifecycle"),
                server("Tracing", "swift-distributed-tracing"),
            ]
        ),
        .target(
            name: "RoboscopeKit",
            dependencies: [
                "RoboscopeGeometry",
                "RoboscopeProofs",
                "RoboscopeWire",
                // gzip for request bodies (`RequestCompression`), on every platform.
                "CZlib",
                // The WebSocket client of Linux (SocketWebSocketTransport); Apple
                // platforms use URLSessionWebSocketTask.
                .target(name: "WebSocketCodec", condition: .when(platforms: [.linux])),
                // TLS for the Linux socket transports; Apple platforms use URLSession's.
                .target(name: "COpenSSL", condition: .when(platforms: [.linux])),
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        .executableTarget(
            name: "roboscope-client",
            dependencies: [
                "RoboscopeKit",
                server("ArgumentParser", "swift-argument-parser"),
            ]
        ),
        .executableTarget(
            name: "roboscope",
            dependencies: [
                "BlockingPool",
                "RoboscopeMetrics",
                "RoboscopeDomain",
                "RoboscopePostgres",
                "RoboscopeHTTP",
                "RoboscopeRedis",
                "RoboscopeGateway",
                "RoboscopeAuth",
                "RoboscopeProofs",
                server("ArgumentParser", "swift-argument-parser"),
                server("Logging", "swift-log"),
                server("ServiceLifecycle", "swift-service-lifecycle"),
                server("Hummingbird", "hummingbird"),
                server("Metrics", "swift-metrics"),
                server("Prometheus", "swift-prometheus"),
                server("OTel", "swift-otel"),
                server("Tracing", "swift-distributed-tracing"),
            ]
        ),
        // The load generator of the gateway benchmark (deploy/local/bench).
        // A measuring tool with threads sharing plain counters: Swift 5 mode spares it the
        // Sendable ceremony the service code keeps.
        .executableTarget(
            name: "gateway-load", dependencies: ["WebSocketCodec", "CLinuxSystem"],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        .testTarget(name: "RoboscopeDomainTests", dependencies: ["RoboscopeDomain"]),
        .testTarget(name: "RoboscopeGeometryTests", dependencies: ["RoboscopeGeometry"]),
        .testTarget(name: "RoboscopeWireTests", dependencies: ["RoboscopeWire"]),
        // RFC 9162's checks against transparency-dev/merkle's test vectors (Vectors/README.md).
        .testTarget(
            name: "RoboscopeProofsTests", dependencies: ["RoboscopeProofs", "RoboscopeWire"], exclude: ["Vectors"]),
        // A clock the unit tests drive by hand (TestInstant), shared by two test targets.
        .target(name: "TestInstants", path: "Tests/TestInstants"),
        .testTarget(
            name: "BlockingPoolTests",
            dependencies: [
                "BlockingPool",
                "TestInstants",
                server("Logging", "swift-log"),
                server("ServiceLifecycle", "swift-service-lifecycle"),
            ]
        ),
        .testTarget(name: "RoboscopeMetricsTests", dependencies: ["RoboscopeMetrics"]),
        .testTarget(name: "RoboscopeRedisTests", dependencies: ["RoboscopeRedis"]),
        .testTarget(name: "RoboscopePostgresTests", dependencies: ["RoboscopePostgres"]),
        .target(name: "RoboscopeKitTesting", dependencies: ["RoboscopeKit"]),
        .testTarget(name: "RoboscopeKitTests", dependencies: ["RoboscopeKit", "RoboscopeKitTesting"]),
        .testTarget(
            name: "RoboscopeHTTPTests",
            dependencies: [
                "RoboscopeHTTP",
                server("HummingbirdTesting", "hummingbird"),
            ]
        ),
        .testTarget(name: "WebSocketCodecTests", dependencies: ["WebSocketCodec"]),
        // The token verifier on every refusal docs/security.md lists, with jwt-kit
        // signing real ES256, RS256 and EdDSA tokens.
        .testTarget(
            name: "RoboscopeAuthTests",
            dependencies: [
                "RoboscopeAuth", "RoboscopeDomain",
                server("JWTKit", "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // The gateway's and the pool's state machines, driven with a test clock: no
        // sockets, no threads, no sleeping.
        .testTarget(
            name: "RoboscopeGatewayTests",
            dependencies: [
                "RoboscopeGateway", "BlockingPool", "TestInstants", "CLinuxSystem",
                server("ServiceLifecycle", "swift-service-lifecycle"),
            ]
        ),
        .testTarget(
            name: "RoboscopeIntegrationTests",
            dependencies: [
                "CLinuxSystem",
                "RoboscopeDomain",
                "RoboscopeKit",
                "RoboscopePostgres",
                "RoboscopeProofs",
                "RoboscopeRedis",
                "WebSocketCodec",
                server("CompressNIO", "compress-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                server("Logging", "swift-log"),
            ],
            // Today's schema as released before the functions moved: the upgrade test's start.
            exclude: ["Fixtures"]
        ),
    ]
)
