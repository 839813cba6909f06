import Foundation

/// Runs blocking work (a child process's whole run, its exit, a database's creation) on a
/// thread of its own and awaits it. Tests run on the cooperative pool, two threads on two
/// cores: a wait of seconds there left every other test's task without a thread, and a
/// test that moves a manual clock a few dozen times ran out of its time bound before it
/// was scheduled (its 30 s passed while servers stopped and databases were migrated).
func onOwnThread<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread.detachNewThread { continuation.resume(returning: work()) }
    }
}

func onOwnThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    // Without `try`, only the overload above can take the call.
    let result: Result<T, any Error> = await onOwnThread { Result { try work() } }
    return try result.get()
}

/// A value handed to another thread that only that thread touches from then on.
struct Handed<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

extension Process {
    /// Waits for the exit (off the cooperative pool) and returns its status.
    func exitStatus() async -> Int32 {
        let process = Handed(self)
        return await onOwnThread {
            process.value.waitUntilExit()
            return process.value.terminationStatus
        }
    }
}
