import Foundation
import Hummingbird
import RoboscopeDomain
import RoboscopeRedis

/// `/admin/connections?tenant=&subject=`: the open WebSocket connections of every gateway,
/// as each publishes them in Redis (`roboscope:ws:connections:<gateway>`, every 2 s, with
/// a TTL), and closing them (`DELETE`: published to every gateway, which closes the
/// matching sockets with 4001 `disconnected`). An operator sees every tenant's; an
/// administrator its own tenant's.
struct ConnectionsController {
    let services: APIServices
    /// Most connections a listing answers (each gateway publishes 10,000 at most).
    static let maxListed = 10_000

    /// The tenant and subject asked for, within the principal's reach.
    private func filter(
        _ input: RequestInput, _ context: RoboscopeRequestContext
    )
        throws -> (tenant: String?, subject: String?)
    {
        let tenant = try RevocationCommands.reach(of: context.principal).tenantFilter(asking: input.query("tenant"))
        let subject = input.query("subject")
        if let subject, subject.isEmpty || subject.count > Principal.maxSubjectLength {
            throw DomainError(
                .invalidField, "query subject: 1 to \(Principal.maxSubjectLength) characters", field: "subject")
        }
        return (tenant, subject)
    }

    func list(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let input = RequestInput(request: request, context: context, bodyLimit: services.bodyLimit)
        let (tenant, subject) = try filter(input, context)
        let documents = try await Self.published(services.locks.redis, under: services.connectionKeys)
        var listed: [JSONValue] = []
        var matching = 0
        for document in documents {
            guard case .object(let fields) = document, case .array(let rows)? = fields["connections"] else { continue }
            for row in rows {
                guard case .object(var entry) = row, tenant == nil || entry["tenant"]?.stringValue == tenant,
                    subject == nil || entry["subject"]?.stringValue == subject
                else { continue }
                matching += 1
                guard listed.count < Self.maxListed else { continue }
                entry["gateway"] = fields["gateway"] ?? .null
                listed.append(.object(entry))
            }
        }
        return JSONResponse.make(
            JSONValue.object([
                "connections": .array(listed), "gateways": .integer(Int64(documents.count)),
                "truncated": .bool(matching > listed.count),
            ]))
    }

    func disconnect(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let input = RequestInput(request: request, context: context, bodyLimit: services.bodyLimit)
        let (tenant, subject) = try filter(input, context)
        // Every tenant's sockets at once is no operator's intent: name one.
        guard let tenant else {
            throw DomainError(.invalidField, "query tenant: required to disconnect", field: "tenant")
        }
        var payload: JSONObject = ["tenant": .string(tenant)]
        if let subject { payload["subject"] = .string(subject) }
        let text = String(decoding: JSONValue.object(payload).canonicalJSON, as: UTF8.self)
        let reply = try await services.locks.redis.command(["PUBLISH", services.connectionKeys.disconnectChannel, text])
        context.logger.warning(
            "connections disconnected",
            metadata: [
                "disconnected_tenant": "\(tenant)", "disconnected_subject": "\(subject ?? "")",
                "by": "\(context.principal.tenant)/\(context.principal.subject)",
            ])
        return JSONResponse.make(
            JSONValue.object([
                "tenant": .string(tenant), "subject": subject.map(JSONValue.string) ?? .null,
                "gateways_told": .integer(reply.integer ?? 0),
            ]), status: .accepted)
    }

    /// The deployment's gateways' published documents (SCAN, then GET each: a gateway that stopped
    /// publishing is gone with its key's TTL).
    static func published(_ redis: RedisPool, under directory: ConnectionDirectoryKeys) async throws -> [JSONValue] {
        try await redis.withConnection { connection in
            var cursor = "0"
            var keys: [String] = []
            repeat {
                let reply = try connection.command([
                    "SCAN", cursor, "MATCH", directory.keyPrefix + "*", "COUNT", "1000",
                ])
                guard let parts = reply.array, parts.count == 2 else { break }
                cursor = parts[0].string ?? "0"
                keys += (parts[1].array ?? []).compactMap(\.string)
            } while cursor != "0" && keys.count < 10_000
            guard !keys.isEmpty else { return [] }
            let values = try connection.command(["MGET"] + keys).array ?? []
            return values.compactMap { $0.string.flatMap { try? JSONParser.parse(Data($0.utf8)) } }
        }
    }
}
