import Foundation
import Testing

/// `--log-format json`: every line is one JSON object; every request leaves an access
/// line carrying its request id (the one returned in `X-Request-Id`).
@Suite(.serialized) struct LoggingTests {
    @Test func jsonLinesWithTheRequestIDOnEachRequest() async throws {
        let server = try await ServerProcess(
            databaseURL: try await TestDatabase.fresh("logging"),
            extraArguments: ["--log-format", "json", "--log-level", "info"]
        )
        let reply = try await server.client.send("GET", "/api/v1/spaces", headers: ["X-Request-Id": "trace-json-1"])
        #expect(reply.header("X-Request-Id") == "trace-json-1")
        _ = try await server.client.get("/api/v1/markers/not-a-uuid")
        #expect(await server.terminate() == 0)

        let lines = server.log().split(separator: "\n").filter { !$0.isEmpty }
        let objects = lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: String] }
        let notJSON = lines.filter {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: String]) == nil
        }
        #expect(notJSON.isEmpty, "\(notJSON.prefix(3))")
        #expect(
            objects.allSatisfy { $0["level"] != nil && $0["message"] != nil && $0["label"] != nil && $0["time"] != nil }
        )
        let access = objects.filter { $0["message"] == "request" }
        #expect(
            access.contains {
                $0["request_id"] == "trace-json-1" && $0["path"] == "/api/v1/spaces" && $0["status"] == "200"
            })
        #expect(
            access.contains {
                $0["path"] == "/api/v1/markers/not-a-uuid" && $0["status"] == "422" && $0["request_id"] != nil
            })
    }
}
