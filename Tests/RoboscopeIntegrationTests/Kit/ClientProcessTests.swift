import Testing

/// The tests' `ClientProcess`: once `hasEnded`, every line the client wrote is there, even
/// with many clients exiting at once (a clean-clone CI run once saw an exit before the
/// standard error the client had written before it).
@Suite struct ClientProcessTests {
    @Test func everyLineIsThereOnceTheClientHasEnded() async throws {
        try await withThrowingTaskGroup(of: [String].self) { group in
            for _ in 0..<16 {
                group.addTask {
                    // Nothing listens on port 1: the client says why on standard error and exits 1.
                    let client = try ClientProcess(["get", "--url", "http://127.0.0.1:1", "/spaces"])
                    client.closeInput()
                    #expect(await client.process.exitStatus() == 1)
                    try await eventually("the client ended", within: 30) { client.hasEnded }
                    return client.errorLines
                }
            }
            for try await lines in group {
                #expect(lines.contains { $0.contains("cannot connect") }, "\(lines)")
            }
        }
    }
}
