import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The real `roboscope-client` binary, with its output collected line by line.
final class ClientProcess: @unchecked Sendable {
    let process = Process()
    let input = Pipe()
    private let output = LineCollector()
    private let errors = LineCollector()

    static var binary: URL {
        ServerProcess.binary.deletingLastPathComponent().appendingPathComponent("roboscope-client")
    }

    /// `environment`: variables set on top of the test process's own.
    init(_ arguments: [String], environment: [String: String] = [:]) throws {
        process.executableURL = Self.binary
        process.arguments = arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        process.standardOutput = output.pipe
        process.standardInput = input
        process.standardError = errors.pipe
        try process.run()
        ChildProcesses.register(process.processIdentifier)
    }

    /// Standard output's complete lines so far.
    var lines: [String] { output.lines }
    /// Standard error's complete lines so far.
    var errorLines: [String] { errors.lines }

    /// The process exited and all it wrote was read: the lines are all there. (An exit
    /// alone is not enough: its last writes may still be in the pipes.)
    var hasEnded: Bool { !process.isRunning && output.drained && errors.drained }

    func write(_ text: String) {
        input.fileHandleForWriting.write(Data(text.utf8))
    }

    func closeInput() {
        try? input.fileHandleForWriting.close()
    }

    /// Sends `signal` and waits for the exit status.
    func stop(_ signal: Int32 = SIGTERM) async -> Int32 {
        if process.isRunning { kill(process.processIdentifier, signal) }
        return await process.exitStatus()
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
}

/// A pipe's complete lines, collected as they come.
final class LineCollector: @unchecked Sendable {
    let pipe = Pipe()
    private let lock = NSLock()
    private var buffer = Data()
    private var complete: [String] = []

    init() {
        pipe.fileHandleForReading.readabilityHandler = { [weak self] handle in
            guard let self else { return }
            // Read under the lock, so that `drained` never sees bytes that left the pipe
            // but are not lines yet.
            self.lock.withLock {
                let chunk = handle.availableData
                guard !chunk.isEmpty else { return }
                self.buffer.append(chunk)
                while let newline = self.buffer.firstIndex(of: 0x0A) {
                    self.complete.append(String(decoding: self.buffer[self.buffer.startIndex..<newline], as: UTF8.self))
                    self.buffer = Data(self.buffer[(newline + 1)...])
                }
            }
        }
    }

    var lines: [String] { lock.withLock { complete } }

    /// Nothing is left in the pipe to read (at its end, a pipe polls as hung up, not
    /// readable). Once the writer has exited, its lines are all here. (Waiting for the
    /// pipe's end instead timed out here 1 run in 4.)
    var drained: Bool {
        lock.withLock {
            var poller = pollfd(fd: pipe.fileHandleForReading.fileDescriptor, events: Int16(POLLIN), revents: 0)
            return poll(&poller, 1, 0) == 0 || poller.revents & Int16(POLLIN) == 0
        }
    }
}
