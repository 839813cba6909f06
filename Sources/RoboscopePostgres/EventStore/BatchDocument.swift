import RoboscopeDomain

/// The JSON argument of `eventlog.append(batch jsonb)`; see schema/functions/append.sql.
/// One request's batch, or several committed together (`AppendCombiner`): their locks,
/// checks and events in one list each, every key with its own answer.
struct BatchDocument: JSONWritable {
    /// One request's share of the document.
    struct Request: Sendable {
        let batch: AppendBatch
        let claim: IdempotencyClaim?
        /// Stored with the claim; without one the caller stores it in the same transaction.
        let answer: StoredAnswer?
    }

    let requests: [Request]
    /// Metadata on every event, as appends before the batch-level `metadata` took it
    /// (what a database of that release must be given, and what several requests need).
    var metadataOnEveryEvent: Bool

    init(batch: AppendBatch, claim: IdempotencyClaim?, answer: StoredAnswer?) {
        requests = [Request(batch: batch, claim: claim, answer: answer)]
        metadataOnEveryEvent = false
    }

    init(combining requests: [Request]) {
        self.requests = requests
        metadataOnEveryEvent = requests.count > 1
    }

    func writeJSON(to writer: inout JSONWriter) {
        writer.object { writer in
            writer.key("locks")
            writer.array(requests.lazy.flatMap(\.batch.locks)) { writer, lock in
                writer.object { writer in
                    writer.key("stream"); writer.value(lock.name)
                    writer.key("exclusive"); writer.value(lock.exclusive)
                }
            }
            writer.key("require")
            writer.array(requests.lazy.flatMap(\.batch.requiredStreams)) { writer, stream in
                writer.object { writer in
                    writer.key("stream_type"); writer.value(stream.type.rawValue)
                    writer.key("stream_id"); writer.value(stream.id)
                }
            }
            writer.key("expect_children")
            writer.array(requests.lazy.flatMap(\.batch.expectedChildren)) { writer, children in
                writer.object { writer in
                    writer.key("kind"); writer.value(children.kind.rawValue)
                    writer.key("parent_id"); writer.value(children.parentID)
                    writer.key("ids"); writer.array(children.childIDs) { $0.value($1) }
                }
            }
            let checks = requests.compactMap(\.batch.lockCheck)
            if !checks.isEmpty {
                writer.key("lock_check")
                let write = { (writer: inout JSONWriter, check: LockCheck) in
                    writer.object { writer in
                        writer.key("work_session_id"); writer.value(check.workSessionID)
                        writer.key("token_sha256"); writer.value(check.tokenSHA256)
                    }
                }
                if requests.count == 1 { write(&writer, checks[0]) } else { writer.array(checks, write) }
            }
            let claims = requests.compactMap { request in request.claim.map { ($0, request.answer) } }
            if !claims.isEmpty {
                writer.key("idempotency")
                let write = { (writer: inout JSONWriter, claimed: (IdempotencyClaim, StoredAnswer?)) in
                    let (claim, answer) = claimed
                    writer.object { writer in
                        writer.key("actor"); writer.value(claim.actor)
                        writer.key("key"); writer.value(claim.key)
                        writer.key("fingerprint"); writer.value(claim.fingerprint)
                        if let answer {
                            writer.key("status"); writer.value(Int64(answer.status))
                            writer.key("body"); writer.value(String(decoding: answer.body, as: UTF8.self))
                        }
                    }
                }
                if requests.count == 1 { write(&writer, claims[0]) } else { writer.array(claims, write) }
            }
            let events = requests.lazy.flatMap(\.batch.events)
            // A request's events share their metadata but for the event that caused each
            // (a bulk's details name their marker's creation): written once for the batch,
            // with each event's own `causation_id` where it differs, a bulk batch's
            // document is a third smaller for the server to parse.
            let base =
                metadataOnEveryEvent
                ? nil
                : events.first.map(\.metadata).flatMap { first in
                    events.allSatisfy { event in
                        var metadata = event.metadata
                        metadata.causationID = first.causationID
                        return metadata == first
                    } ? first : nil
                }
            if let base {
                writer.key("metadata"); writer.value(base)
            }
            writer.key("events")
            writer.array(events) { writer, event in
                writer.object { writer in
                    writer.key("event_id"); writer.value(event.eventID)
                    writer.key("stream_type"); writer.value(event.stream.type.rawValue)
                    writer.key("stream_id"); writer.value(event.stream.id)
                    writer.key("expected_version")
                    switch event.expectedVersion {
                    case .any: writer.null()
                    case .noStream: writer.value(Int64(0))
                    case .exactly(let version): writer.value(version)
                    }
                    writer.key("type"); writer.value(event.type.rawValue)
                    writer.key("data"); writer.value(event.payload)
                    if let base {
                        if event.metadata.causationID != base.causationID {
                            writer.key("metadata")
                            writer.object {
                                $0.key("causation_id"); $0.value(event.metadata.causationID?.description)
                            }
                        }
                    } else {
                        writer.key("metadata"); writer.value(event.metadata)
                    }
                }
            }
        }
    }
}
