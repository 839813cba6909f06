import RoboscopeDomain

/// The JSON argument of `eventlog.append(batch jsonb)`; see schema/0004_append_function.sql.
struct BatchDocument: JSONWritable {
    let batch: AppendBatch
    let claim: IdempotencyClaim?
    /// Stored with the claim; without one the caller stores it in the same transaction.
    let answer: StoredAnswer?
    /// Metadata on every event, as appends before the batch-level `metadata` took it
    /// (what a database of that release must be given).
    var metadataOnEveryEvent = false

    func writeJSON(to writer: inout JSONWriter) {
        writer.object { writer in
            writer.key("locks")
            writer.array(batch.locks) { writer, lock in
                writer.object { writer in
                    writer.key("stream"); writer.value(lock.name)
                    writer.key("exclusive"); writer.value(lock.exclusive)
                }
            }
            writer.key("require")
            writer.array(batch.requiredStreams) { writer, stream in
                writer.object { writer in
                    writer.key("stream_type"); writer.value(stream.type.rawValue)
                    writer.key("stream_id"); writer.value(stream.id)
                }
            }
            writer.key("expect_children")
            writer.array(batch.expectedChildren) { writer, children in
                writer.object { writer in
                    writer.key("kind"); writer.value(children.kind.rawValue)
                    writer.key("parent_id"); writer.value(children.parentID)
                    writer.key("ids"); writer.array(children.childIDs) { $0.value($1) }
                }
            }
            if let check = batch.lockCheck {
                writer.key("lock_check")
                writer.object { writer in
                    writer.key("work_session_id"); writer.value(check.workSessionID)
                    writer.key("token_sha256"); writer.value(check.tokenSHA256)
                }
            }
            if let claim {
                writer.key("idempotency")
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
            // A request's events share their metadata but for the event that caused each
            // (a bulk's details name their marker's creation): written once for the batch,
            // with each event's own `causation_id` where it differs, a bulk batch's
            // document is a third smaller for the server to parse.
            let base = metadataOnEveryEvent ? nil : batch.events.first.map(\.metadata).flatMap { first in
                batch.events.allSatisfy { event in
                    var metadata = event.metadata
                    metadata.causationID = first.causationID
                    return metadata == first
                } ? first : nil
            }
            if let base {
                writer.key("metadata"); writer.value(base)
            }
            writer.key("events")
            writer.array(batch.events) { writer, event in
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
                            writer.object { $0.key("causation_id"); $0.value(event.metadata.causationID?.description) }
                        }
                    } else {
                        writer.key("metadata"); writer.value(event.metadata)
                    }
                }
            }
        }
    }
}
