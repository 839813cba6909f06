import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// gateway-load: the load generator of deploy/local/bench's gateway benchmark.
guard let options = LoadOptions.parse(Array(CommandLine.arguments.dropFirst())) else {
    FileHandle.standardError.write(Data((LoadOptions.usage + "\n").utf8))
    exit(2)
}
signal(SIGPIPE, SIG_IGN)
raiseFileLimit()

let rssBefore = residentKiB(options.serverPID)
let subscribers = Subscribers(options: options)
let openStarted = nowMicros()
let opened = subscribers.open()
let openSeconds = Double(nowMicros() - openStarted) / 1e6
subscribers.start()
if options.mode == .gateway {
    // Every subscription confirmed before the first write.
    let deadline = nowMicros() + 60_000_000
    while subscribers.subscribedCount < opened, nowMicros() < deadline { usleep(1_000) }
}
// From the first connect to the last subscription confirmed: a reconnect storm's length.
let subscribeSeconds = Double(nowMicros() - openStarted) / 1e6
usleep(500_000)
let rssOpen = residentKiB(options.serverPID)

var result: [String: Any] = [
    "mode": options.mode.rawValue, "connections_requested": options.connections, "connections_opened": opened,
    "open_seconds": openSeconds, "subscribed": subscribers.subscribedCount, "subscribe_seconds": subscribeSeconds,
    "server_rss_kib_before": rssBefore, "server_rss_kib_open": rssOpen,
    "server_rss_bytes_per_connection": opened > 0 && rssBefore > 0
        ? Double(rssOpen - rssBefore) * 1024 / Double(opened) : 0,
]

if options.mode == .presence {
    let before = subscribers.presentCount
    let started = nowMicros()
    usleep(UInt32(options.seconds * 1_000_000))
    let answered = subscribers.presentCount - before
    let seconds = Double(nowMicros() - started) / 1e6
    let (_, _, closed) = subscribers.finish()
    result["presence_answered"] = answered
    result["presence_per_second"] = Double(answered) / seconds
    result["presence_errors"] = subscribers.errorCount
    result["closed_during_run"] = closed
} else if options.holdOnly {
    // Until the time is up, or SIGUSR1 (the benchmark ends a hold it measured).
    let holdEnd = nowMicros() + Int64(options.seconds * 1_000_000)
    signal(SIGUSR1, SIG_IGN)
    let endHold = DispatchSource.makeSignalSource(signal: SIGUSR1)
    let holdEnded = Atomic<Bool>(false)
    endHold.setEventHandler { holdEnded.store(true, ordering: .relaxed) }
    endHold.resume()
    print(#"{"held":\#(opened)}"#)
    fflush(stdout)
    while nowMicros() < holdEnd, !holdEnded.load(ordering: .relaxed) { usleep(50_000) }
    let (_, _, closed) = subscribers.finish()
    result["held_seconds"] = options.seconds
    result["closed_while_held"] = closed
    result["server_rss_kib_end"] = residentKiB(options.serverPID)
} else {
    let started = nowMicros()
    let cpuStarted = cpuSeconds(options.serverPID)
    let deadline = started + Int64(options.seconds * 1_000_000)
    let group = DispatchGroup()
    final class Tallies: Sendable { let list = Mutex<[WriterTally]>([]) }
    let tallies = Tallies()
    for number in 0..<options.writers {
        group.enter()
        Thread {
            let tally = Writer(options: options).run(
                until: deadline, rate: options.rate / Double(options.writers), number: number, count: options.writers
            )
            tallies.list.withLock { $0.append(tally) }
            group.leave()
        }.start()
    }
    group.wait()
    let writers = tallies.list.withLock { $0 }
    let wrote = nowMicros()
    // Let the tail arrive: until every expected delivery is in, or 5 s.
    let writes = writers.reduce(0) { $0 + $1.sent.count }
    // Each write is expected at every connection that follows its session.
    let followers = subscribers.followersBySession
    let expected = writers.reduce(0) { total, writer in
        total + writer.perSession.reduce(0) { $0 + $1.value * (followers[$1.key] ?? 0) }
    }
    // Waits for the writes' own messages. Counting every message, the acks and presence
    // frames each subscription also gets ended the wait while the last write's deliveries
    // were still arriving, and those were reported missing.
    while nowMicros() - wrote < 5_000_000 {
        usleep(50_000)
        if subscribers.deliveryCount >= expected { break }
    }
    let finished = nowMicros()
    // The server's CPU from the first write to the last delivery in (or the wait's end).
    result["server_cpu_seconds"] = cpuSeconds(options.serverPID) - cpuStarted
    let (receipts, messages, closed) = subscribers.finish()
    var sent: [[UInt8]: Int64] = [:]
    for writer in writers { sent.merge(writer.sent) { $1 } }
    var latencies: [Int64] = []
    latencies.reserveCapacity(receipts.count)
    for receipt in receipts {
        if let at = sent[receipt.id] { latencies.append(max(0, receipt.at - at)) }
    }
    latencies.sort()
    func percentile(_ p: Double) -> Double {
        latencies.isEmpty ? 0 : Double(latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))]) / 1000
    }
    let writeSeconds = Double(wrote - started) / 1e6
    result["writes"] = writes
    result["write_failures"] = writers.reduce(0) { $0 + $1.failures }
    result["writes_per_second"] = Double(writes) / writeSeconds
    result["messages_received"] = messages
    result["messages_per_second"] = Double(messages) / (Double(finished - started) / 1e6)
    result["deliveries_matched"] = latencies.count
    result["deliveries_expected"] = expected
    result["latency_ms_p50"] = percentile(0.50)
    result["latency_ms_p99"] = percentile(0.99)
    result["latency_ms_max"] = latencies.last.map { Double($0) / 1000 } ?? 0
    result["closed_during_run"] = closed
    if options.deflate == .distinctMessages { result["messages_inflated"] = subscribers.inflationCount }
    result["sessions"] = max(1, options.sessions.count)
}
let json = try JSONSerialization.data(withJSONObject: result, options: [.sortedKeys])
print(String(decoding: json, as: UTF8.self))
