import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import RoboscopeDomain

/// `GET /console`: the investigations console (docs/investigations.md), a page of plain
/// HTML, CSS and JavaScript modules in `console/`, served by this process: no build step,
/// no CDN. The files are read once at start; each answer carries an `ETag`, and a
/// request that names it gets 304. The page reads only the public API, with the token
/// the investigator gives it.
public struct ConsoleAssets: Sendable {
    struct Asset: Sendable {
        let body: [UInt8]
        let contentType: String
        let etag: String
    }

    let assets: [String: Asset]

    /// Reads every file of `directory` (one level: the page is small).
    public init(directory: URL) throws {
        var assets: [String: Asset] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) where !name.hasPrefix(".") {
            let bytes = Array(try Data(contentsOf: directory.appendingPathComponent(name)))
            let digest = SHA256.hash(data: bytes).prefix(8).map {
                $0 < 16 ? "0" + String($0, radix: 16) : String($0, radix: 16)
            }.joined()
            assets[name] = Asset(body: bytes, contentType: Self.contentType(name), etag: "\"\(digest)\"")
        }
        self.assets = assets
    }

    static func contentType(_ name: String) -> String {
        switch name.split(separator: ".").last {
        case "html": return "text/html; charset=utf-8"
        case "js": return "text/javascript; charset=utf-8"
        case "css": return "text/css; charset=utf-8"
        case "svg": return "image/svg+xml"
        case "png": return "image/png"
        default: return "application/octet-stream"
        }
    }

    /// Finds `console/`: `ROBOSCOPE_CONSOLE_DIR`, then `./console`, then next to the
    /// executable (`.build/<config>/roboscope` → repository root, or `../share/roboscope/console`).
    public static func locate(explicit: String?) -> URL? {
        var candidates: [String] = []
        if let explicit { candidates.append(explicit) }
        if let environment = ProcessInfo.processInfo.environment["ROBOSCOPE_CONSOLE_DIR"] {
            candidates.append(environment)
        }
        candidates.append(FileManager.default.currentDirectoryPath + "/console")
        let executable = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent()
        for relative in ["../../console", "../../../console", "../share/roboscope/console"] {
            candidates.append(executable.appendingPathComponent(relative).standardized.path)
        }
        var isDirectory: ObjCBool = false
        return candidates.first {
            FileManager.default.fileExists(atPath: $0 + "/index.html", isDirectory: &isDirectory)
        }
        .map { URL(fileURLWithPath: $0) }
    }
}

struct ConsoleController {
    static let etagHeader = HTTPField.Name("ETag")!
    static let ifNoneMatch = HTTPField.Name("If-None-Match")!
    static let cacheControl = HTTPField.Name("Cache-Control")!
    static let securityPolicy = HTTPField.Name("Content-Security-Policy")!
    let assets: ConsoleAssets

    func addRoutes<Context: RequestContext>(to router: RouterGroup<Context>) {
        router.get("console") { request, _ in serve("index.html", request) }
        router.get("console/:file") { request, context in serve(context.parameters.get("file") ?? "", request) }
    }

    func serve(_ name: String, _ request: Request) -> Response {
        guard let asset = assets.assets[name] else {
            return APIError.response(
                for: DomainError(.notFound, "no console file \(name.prefix(64))"), requestID: "console")
        }
        var headers: HTTPFields = [.contentType: asset.contentType]
        headers[Self.etagHeader] = asset.etag
        // Cached, but asked again every time: a new release's files are seen at once.
        headers[Self.cacheControl] = "no-cache"
        headers[Self.securityPolicy] =
            """
            default-src 'self'; img-src 'self' data: blob:; style-src 'self'; object-src 'none'; base-uri 'none'; \
            frame-ancestors 'none'; form-action 'self'
            """
        if request.headers[Self.ifNoneMatch] == asset.etag {
            return Response(status: .notModified, headers: headers)
        }
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: asset.body)))
    }
}
