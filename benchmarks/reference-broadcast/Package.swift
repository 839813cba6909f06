// swift-tools-version:6.0
// The comparison server of the gateway benchmark: a broadcast server on
// hummingbird-websocket, built only by deploy/local/bench (never by CI).
import PackageDescription

let package = Package(
    name: "reference-broadcast",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket.git", from: "2.8.1"),
    ],
    targets: [
        .executableTarget(
            name: "reference-broadcast",
            dependencies: [
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
            ]
        ),
    ]
)
