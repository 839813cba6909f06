import Foundation
import WebSocketCodec
#if canImport(Glibc)
import Glibc
#endif

/// What one writer did: when each write's response arrived, by id, how many writes
/// went to each session (by index), and how many failed.
struct WriterTally: Sendable {
    var sent: [[UInt8]: Int64] = [:]
    var perSession: [Int: Int] = [:]
    var failures = 0
}

/// Posts writes over a keep-alive HTTP/1.1 connection and notes when each response
/// arrived, by id: a marker (gateway mode) or a published message (reference mode).
struct Writer: Sendable {
    let options: LoadOptions

    /// Writes at `rate` per second (or flat out) until `deadline`; writer `number` of
    /// `count` takes every count-th session from its own, so writers together go round them.
    func run(until deadline: Int64, rate: Double, number: Int = 0, count: Int = 1) -> WriterTally {
        var tally = WriterTally()
        guard let fd = Blocking.connect(port: options.httpPort) else { tally.failures += 1; return tally }
        defer { close(fd) }
        var next = nowMicros()
        let interval = rate > 0 ? Int64(1_000_000 / rate) : 0
        var index = 0
        while nowMicros() < deadline {
            if interval > 0 {
                let wait = next - nowMicros()
                if wait > 0 { usleep(UInt32(wait)) }
                next += interval
            }
            let id = UUID().uuidString.lowercased()
            let sessionIndex = (number + index * count) % max(1, options.sessions.count)
            let (path, body) = request(id: id, index: index, session: options.session(sessionIndex))
            index += 1
            let head =
                """
                POST \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
                Content-Length: \(body.utf8.count)\r\n\(options.authorizationLine)\r\n
                """
            guard Blocking.writeAll(fd, Array((head + body).utf8)),
                let (response, _) = Blocking.readUntil(fd, Self.complete)
            else {
                tally.failures += 1
                return tally
            }
            let at = nowMicros()
            guard response.starts(with: Array("HTTP/1.1 20".utf8)) else { tally.failures += 1; continue }
            tally.sent[Array(id.utf8)] = at
            tally.perSession[sessionIndex, default: 0] += 1
        }
        return tally
    }

    private func request(id: String, index: Int, session: String) -> (String, String) {
        switch options.mode {
        case .gateway, .presence:
            return (
                "/api/v1/markers",
                """
                {"id":"\(id)","work_session_id":"\(session)","label":"load \(index)",\
                "p1":[0,0,1],"p2":[2,0,1],"p3":[2,0,4],"p4":[0,0,4]}
                """
            )
        case .reference:
            // What the gateway would send for that marker: the same size and shape.
            return ("/publish", Self.referenceEvent(id: id, session: session, index: index))
        }
    }

    static func referenceEvent(id: String, session: String, index: Int) -> String {
        let time = "2026-11-22T05:00:00Z"
        return """
            {"op":"event","topic":"work_session:\(session)","position":\(index),"type":"marker.created",\
            "stream_type":"marker","stream_id":"\(id)","version":1,"recorded_at":"\(time)","actor":"anonymous",\
            "data":{"id":"\(id)","work_session_id":"\(session)","label":"load \(index)","p1":[0,0,1],"p2":[2,0,1],\
            "p3":[2,0,4],"p4":[0,0,4],"color":null,"version":1,"meta":{},"custom_props":{},"calibrated_data":null,\
            "created_at":"\(time)","updated_at":"\(time)","details":{"marker_id":"\(id)","center_location_long":2.5,\
            "center_location_cross":1,"left_distance":0,"right_distance":2,"far_distance":4,"near_distance":1,\
            "long_size":3,"cross_size":2,"custom_props":{},"created_at":"\(time)","updated_at":"\(time)"}}}
            """
    }

    /// The end of a response with a Content-Length body, or nil if more is needed.
    static func complete(_ bytes: [UInt8]) -> Int? {
        guard let headEnd = UpgradeParser.headEnd(bytes) else { return nil }
        let head = String(decoding: bytes[..<headEnd], as: UTF8.self).lowercased()
        var length = 0
        for line in head.split(separator: "\r\n") where line.hasPrefix("content-length:") {
            length = Int(line.dropFirst(15).trimmingCharacters(in: " ")) ?? 0
        }
        let end = headEnd + 4 + length
        return bytes.count >= end ? end : nil
    }
}
