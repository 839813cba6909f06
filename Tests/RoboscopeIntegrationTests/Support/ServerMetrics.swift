extension ServerProcess {
    /// A series' value in the server's `/metrics` (0 before a counter's first increment);
    /// labels belong to the name (`roboscope_ws_subscribe_answers_total{outcome="granted"}`).
    func metric(_ series: String) async throws -> Int {
        let text = String(decoding: try await client.get("/metrics").body, as: UTF8.self)
        for line in text.split(separator: "\n") where line.hasPrefix(series + " ") {
            return Int(Double(line.dropFirst(series.count + 1)) ?? 0)
        }
        return 0
    }
}
