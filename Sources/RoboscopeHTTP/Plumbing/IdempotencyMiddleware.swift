import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import RoboscopeDomain
import RoboscopePostgres

/// `Idempotency-Key` on POST, PUT, PATCH and DELETE under `/api/v1` (docs/sync.md):
/// a key already answered gets its stored answer again (`Idempotent-Replayed: true`),
/// or 422 when it came with another request; otherwise the request goes on carrying
/// its claim, and the controller stores its answer with its events. Keys belong to
/// the actor, so this runs after authentication.
///
/// The key is not looked up before the request runs: that would cost every keyed
/// write a pool job of its own. Whatever a write does, its key is checked before its
/// answer stands: the append checks it first, under the key's lock (`eventlog.append`);
/// a write that decides to change nothing checks it on its connection (`EventStore`);
/// the lock routes check it once they hold the key (`SessionLocks`). A write that fails
/// first (its entity gone since, its body now invalid) looks the key up here, after the
/// failure, and a key answered before gets its answer instead.
struct IdempotencyMiddleware: APIMiddleware {
    static let keyHeader = HTTPField.Name("Idempotency-Key")!
    static let replayedHeader = HTTPField.Name("Idempotent-Replayed")!
    static let maxKeyLength = 255

    let keys: IdempotencyKeys
    let bodyLimit: Int

    func handle(_ request: Request, context: Context, next: Next) async throws -> Response {
        guard [.post, .put, .patch, .delete].contains(request.method),
            let header = request.headers[values: Self.keyHeader].first,
            // Heartbeats repeat safely by nature.
            !request.uri.path.hasPrefix("/api/v1/presence/")
        else {
            return try await next(request, context)
        }
        let key = try Self.validated(header, count: request.headers[values: Self.keyHeader].count)
        var request = request
        let body = try await RequestInput(request: request, context: context, bodyLimit: bodyLimit).bodyBytes()
        request.body = RequestBody(buffer: ByteBuffer(bytes: body))
        let claim = IdempotencyClaim(
            actor: RequestIdentity.keyOwner(context), key: key,
            fingerprint: Self.fingerprint(method: request.method.rawValue, path: request.uri.path, body: body)
        )
        var context = context
        context.idempotency = claim
        do {
            return try await next(request, context)
        } catch let error as DomainError where error.code == .idempotencyKeyAnswered {
            guard let record = try await keys.replayableRecord(actor: claim.actor, key: key) else { throw error }
            return try Self.replay(record, for: claim)
        } catch let error as DomainError where error.code == .commitUnknown {
            // Its answer is stored on this node, but maybe not on the synchronous standby
            // that a failover would promote: it is not acknowledged until a retry finds it.
            throw error
        } catch {
            // A retry whose write can no longer run as it first did. Without the database,
            // the write's own error says more than the look-up's, unless the look-up found
            // the answer and could not make sure the standby has it.
            let record: IdempotencyRecord?
            do {
                record = try await keys.replayableRecord(actor: claim.actor, key: key)
            } catch let lookUp as DomainError where lookUp.code == .commitUnknown {
                throw lookUp
            } catch {
                record = nil
            }
            guard let record else { throw error }
            return try Self.replay(record, for: claim)
        }
    }

    /// 1 to 255 visible ASCII characters, one header.
    static func validated(_ header: String, count: Int) throws -> String {
        guard count == 1 else {
            throw DomainError(
                .malformedRequest, "Idempotency-Key: send one key, not \(count)", field: "Idempotency-Key")
        }
        guard !header.isEmpty, header.utf8.count <= maxKeyLength,
            header.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
        else {
            throw DomainError(
                .malformedRequest, "Idempotency-Key: expected 1 to \(maxKeyLength) visible ASCII characters (a UUID)",
                field: "Idempotency-Key"
            )
        }
        return header
    }

    /// The request as a key remembers it. A JSON body counts by its value, not its bytes:
    /// a client that serialises its object again on a retry may order the keys otherwise.
    static func fingerprint(method: String, path: String, body: [UInt8]) -> String {
        var hash = SHA256()
        hash.update(data: Array("\(method) \(path)\n".utf8))
        hash.update(data: (try? JSONParser.parse(body))?.canonicalJSON ?? body)
        return hash.finalize().map { byte in byte < 16 ? "0" + String(byte, radix: 16) : String(byte, radix: 16) }
            .joined()
    }

    static func replay(_ record: IdempotencyRecord, for claim: IdempotencyClaim) throws -> Response {
        guard record.fingerprint == claim.fingerprint else {
            throw DomainError(
                .idempotencyKeyReused,
                """
                Idempotency-Key \(claim.key.prefix(64)) was used for another request (method, path or body \
                differ); use a new key
                """,
                field: "Idempotency-Key"
            )
        }
        var response = JSONResponse.make(record.answer)
        response.headers[replayedHeader] = "true"
        return response
    }
}
