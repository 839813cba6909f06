import ArgumentParser
import Foundation
import RoboscopeKit

/// `roboscope-client apply`: sends mutations through a durable outbox. First what the
/// outbox under `--state` still holds, then one mutation per line of standard input,
/// `{"method": "POST", "path": "/markers", "body": {...}}`: each is stored (synced to
/// disk) before it counts as queued, then sent in order with its own idempotency key,
/// retried through outages. One JSON line per settled mutation, `{"line": n, "status":
/// code, "body": {...}}` (the body exactly as the server answered it); an input line
/// that is not a mutation gets `{"line": n, "error": "..."}` and is not sent. Exits once
/// everything is settled: 0 when every line was answered 2xx, 2 when the server refused
/// any (4xx, or 5xx once retries are spent), 1 when a line was not a mutation.
struct Apply: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Apply mutations from standard input through a durable outbox.")

    @OptionGroup var connection: Connection

    @Option(name: .customLong("state"), help: "The folder of the outbox (created if missing).")
    var state: String

    func run() async throws {
        defer { LoggedHTTPTransport.flush() }
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        let store = try OfflineStore(path: URL(fileURLWithPath: state).appendingPathComponent("outbox.sqlite").path)
        let run = ApplyRun(client: connection.client(), store: store, stateID: try Self.stateID(state))
        let (failed, refused) = try await run.run(lines: Self.standardInput())
        if failed { throw ExitCode(1) }
        if refused { throw ExitCode(2) }
    }

    /// The state folder's own id, in the keys of its mutations: a restart that is fed the
    /// same lines again sends them with the same keys, so the service applies none twice.
    static func stateID(_ folder: String) throws -> String {
        let file = URL(fileURLWithPath: folder).appendingPathComponent("id")
        if let id = try? String(contentsOf: file, encoding: .utf8), !id.isEmpty { return id }
        let id = UUID().uuidString.lowercased()
        try id.write(to: file, atomically: true, encoding: .utf8)
        return id
    }

    /// Standard input's lines, read on a thread of their own.
    static func standardInput() -> AsyncStream<String> {
        let (lines, continuation) = AsyncStream<String>.makeStream()
        let thread = Thread {
            while let line = readLine(strippingNewline: true) { continuation.yield(line) }
            continuation.finish()
        }
        thread.name = "stdin"
        thread.start()
        return lines
    }
}

/// One run of `apply`: a reader that queues lines and a sender that settles them, in order.
/// Its work runs on a thread of its own: every outbox call commits to SQLite, which
/// waits for the disk (`DedicatedThreadExecutor` says why that matters).
actor ApplyRun {
    private let executor = DedicatedThreadExecutor(name: "apply-outbox")
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    let client: RoboscopeClient
    let store: OfflineStore
    let stateID: String
    private var inputDone = false
    private var failedLines = false
    private var refusedLines = false
    /// Moves when a line is queued or the input ends.
    private let work = ChangeSignal()

    init(client: RoboscopeClient, store: OfflineStore, stateID: String) {
        self.client = client
        self.store = store
        self.stateID = stateID
    }

    /// Settles every line; returns whether one was not a mutation, and whether the server
    /// refused one. Throws as soon as sending fails for good (an outbox that cannot be
    /// written), input read or not.
    func run(lines: AsyncStream<String>) async throws -> (failed: Bool, refused: Bool) {
        let reader = Task { await read(lines) }
        defer { reader.cancel() }
        try await send()
        return (failedLines, refusedLines)
    }

    private func read(_ lines: AsyncStream<String>) async {
        var number = 0
        for await line in lines {
            number += 1
            queue(line, number: number)
        }
        inputDone = true
        work.signal()
    }

    private func queue(_ line: String, number: Int) {
        if line.trimmingCharacters(in: .whitespaces).isEmpty { return }
        do {
            let mutation = try Mutation(line)
            // `INSERT` refuses a key already queued (a line fed again while still pending).
            if try store.pending().contains(where: { $0.key == key(number, line) }) { return }
            try store.enqueue(
                method: mutation.method, path: mutation.path, body: mutation.body, topic: "apply",
                line: number, key: key(number, line))
            work.signal()
        } catch {
            failedLines = true
            Output.json(["line": .integer(Int64(number)), "error": .string("\(error)")])
        }
    }

    /// The mutation's idempotency key: the state's id, the line number and a digest of
    /// the line (`fnv1a64`: any difference gives another key; a collision could only
    /// make the service refuse a line as a reused key, never apply one twice).
    private func key(_ number: Int, _ line: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in line.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return "\(stateID):\(number):\(String(hash, radix: 16))"
    }

    private func send() async throws {
        var random = SystemRandomNumberGenerator()
        var failures = 0
        while true {
            let seen = work.generation
            guard let write = try store.pending().first else {
                if inputDone { return }
                try await work.wait(after: seen)
                continue
            }
            do {
                let response = try await client.sendAnswering(
                    method: write.method, path: write.path, body: write.body, key: write.key,
                    traceParent: write.traceParent)
                let refusal =
                    (200..<300).contains(response.status)
                    ? nil : RoboscopeError.from(status: response.status, headers: response.headers, body: response.body)
                if let refusal, refusal.isRetryable {
                    // An outage that outlasted the client's own retries: the line waits.
                    failures += 1
                    try await client.configuration.clock.sleep(
                        for: client.configuration.reconnect.delay(forRetry: failures, using: &random))
                    continue
                }
                if response.status == 401 { Diagnostics.tokenRefused(status: response.status, body: response.body) }
                if refusal != nil { refusedLines = true }
                try settle(write, status: response.status, body: response.body)
                failures = 0
            } catch let error as RoboscopeError where error.isRetryable {
                failures += 1
                try await client.configuration.clock.sleep(
                    for: client.configuration.reconnect.delay(forRetry: failures, using: &random))
            } catch let error as RoboscopeError where error != .cancelled {
                // No answer to print (an answer the kit cannot read): the line is settled
                // as refused, with what went wrong, rather than sent again forever.
                refusedLines = true
                let body = JSONValue.object(["error": .object(["message": .string("\(error)")])])
                try settle(write, status: 0, body: try WireCoding.encoder().encode(body))
            }
        }
    }

    /// Prints the line's answer, then removes it from the outbox (a crash in between
    /// prints it again after the restart, with the service's stored answer). An outbox
    /// that cannot be written ends the run: carrying on would send the line again and
    /// again, forever (its key keeps the service from applying it twice, nothing else).
    private func settle(_ write: PendingWrite, status: Int, body: Data) throws {
        let json =
            body.isEmpty
            ? JSONValue.null
            : ((try? WireCoding.decoder().decode(JSONValue.self, from: body))
                ?? .string(String(decoding: body, as: UTF8.self)))
        Output.json(["line": .integer(Int64(write.line ?? 0)), "status": .integer(Int64(status)), "body": json])
        try store.settle(write.key)
    }
}

/// One input line: `{"method", "path", "body"}`.
struct Mutation {
    let method: String
    let path: String
    let body: Data?

    struct Invalid: Error, CustomStringConvertible {
        let description: String
    }

    init(_ line: String) throws {
        guard let value = try? WireCoding.decoder().decode(JSONValue.self, from: Data(line.utf8)),
            case .object(let fields) = value
        else {
            throw Invalid(description: "not a JSON object: expected {\"method\", \"path\", \"body\"}")
        }
        guard let method = fields["method"]?.stringValue?.uppercased(),
            ["POST", "PUT", "PATCH", "DELETE"].contains(method)
        else {
            throw Invalid(description: "method: expected POST, PUT, PATCH or DELETE")
        }
        guard let path = fields["path"]?.stringValue, path.hasPrefix("/"), !path.contains(" "), !path.hasPrefix("//")
        else {
            throw Invalid(description: "path: expected a path under /api/v1 such as /markers")
        }
        self.method = method
        self.path = path.hasPrefix("/api/v1/") ? String(path.dropFirst("/api/v1".count)) : path
        switch fields["body"] {
        case nil, .null?: body = nil
        case .object?, .array?: body = try WireCoding.encoder().encode(fields["body"]!)
        default: throw Invalid(description: "body: expected a JSON object")
        }
    }
}
