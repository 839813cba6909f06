import Foundation

/// Runs blocking work on a thread of its own and awaits its result.
func onThread<T: Sendable>(named name: String, _ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread { continuation.resume(with: Result { try work() }) }
        thread.name = name
        thread.start()
    }
}
