import Foundation

/// Waits for a condition instead of a fixed time: checks `condition` every few
/// milliseconds until it holds, and fails naming `what` after `seconds`. The default
/// bound is long because it only costs time when the test fails anyway: while every suite
/// runs at once on two cores, making a pool's connections alone took more than 10 s.
func eventually(
    _ what: String, within seconds: Double = 30, _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
    while ContinuousClock.now < deadline {
        if try await condition() { return }
        try await Task.sleep(for: .milliseconds(20))
    }
    throw TestFailure("\(what): not within \(seconds) s")
}

/// One value read straight from a test database.
func scalar(_ databaseURL: String, _ sql: String, _ parameters: [String?] = []) throws -> Int64 {
    try PGConnectionForTests.query(databaseURL, sql, parameters)
}
