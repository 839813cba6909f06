import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RoboscopeDomain

/// A small client over real sockets (URLSession) for the contract tests.
struct HTTPClient: Sendable {
    let base: URL

    struct Reply: Sendable {
        let status: Int
        let headers: [String: String]
        let body: Data

        /// The body as JSON; `.null` for an empty body.
        var json: JSONValue {
            guard !body.isEmpty else { return .null }
            return (try? JSONDecoder().decode(JSONValue.self, from: body))
                ?? .string(String(decoding: body, as: UTF8.self))
        }

        func header(_ name: String) -> String? {
            headers.first { $0.key.lowercased() == name.lowercased() }?.value
        }
    }

    static let session: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = 64
        configuration.timeoutIntervalForRequest = 30
        return URLSession(configuration: configuration)
    }()

    func send(
        _ method: String, _ path: String, body: Data? = nil, headers: [String: String] = [:]
    ) async throws -> Reply {
        var request = URLRequest(url: URL(string: path, relativeTo: base)!)
        request.httpMethod = method
        request.httpBody = body
        if body != nil { request.setValue("application/json", forHTTPHeaderField: "Content-Type") }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let (data, response) = try await Self.session.data(for: request)
        let http = response as! HTTPURLResponse
        var replyHeaders: [String: String] = [:]
        for (key, value) in http.allHeaderFields {
            replyHeaders["\(key)"] = "\(value)"
        }
        return Reply(status: http.statusCode, headers: replyHeaders, body: data)
    }

    func send(_ method: String, _ path: String, json: JSONValue, headers: [String: String] = [:]) async throws -> Reply
    {
        try await send(method, path, body: try JSONEncoder().encode(json), headers: headers)
    }

    func get(_ path: String) async throws -> Reply { try await send("GET", path) }
    func post(_ path: String, _ json: JSONValue, headers: [String: String] = [:]) async throws -> Reply {
        try await send("POST", path, json: json, headers: headers)
    }
    func patch(_ path: String, _ json: JSONValue, headers: [String: String] = [:]) async throws -> Reply {
        try await send("PATCH", path, json: json, headers: headers)
    }
    func put(_ path: String, _ json: JSONValue) async throws -> Reply { try await send("PUT", path, json: json) }
    func delete(_ path: String, headers: [String: String] = [:]) async throws -> Reply {
        try await send("DELETE", path, headers: headers)
    }
}
