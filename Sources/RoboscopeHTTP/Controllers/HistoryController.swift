import Foundation
import Hummingbird
import RoboscopeDomain
import RoboscopePostgres
import RoboscopeProofs

/// Verifiable history (DESIGN.md; docs/investigations.md, "Proving the history"): the
/// tenant's newest signed checkpoint and the service's verifier key, RFC 9162 inclusion
/// and consistency proofs, and the log's entries as a verifier checks them. Scope
/// `audit`; always the caller's own tenant's log.
struct HistoryController {
    let services: APIServices

    /// Most entries a page of `/proofs/entries` holds.
    static let maxEntries: Int64 = 1000

    private func signingKey() throws -> NoteVerifier {
        guard let key = services.store.signer?.verifier else {
            throw DomainError(.notFound, "this deployment does not sign its history (--signing-key-file)")
        }
        return key
    }

    func latestCheckpoint(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        try services.gate.require(.audit, context)
        _ = try signingKey()
        let tenant = context.principal.tenant
        guard let checkpoint = try await services.history.latestCheckpoint(tenant: tenant) else {
            throw DomainError(
                .notFound, "no checkpoint of this tenant's log yet: it is empty, or its first is on its way")
        }
        return Self.text(checkpoint.note)
    }

    func verifierKey(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        try services.gate.require(.audit, context)
        return Self.text(try signingKey().description + "\n")
    }

    func inclusion(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let input = RequestInput(request: request, context: context, bodyLimit: services.bodyLimit)
        try services.gate.require(.audit, context)
        let number = try Self.required(input, "tenant_seq")
        let size = try Self.required(input, "tree_size")
        let proof = try await services.history.inclusionProof(
            tenant: context.principal.tenant, tenantSeq: number, treeSize: size)
        return JSONResponse.make(
            JSONValue.object([
                "leaf_index": .integer(number - 1), "tree_size": .integer(size), "hashes": Self.base64(proof),
            ]))
    }

    func consistency(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let input = RequestInput(request: request, context: context, bodyLimit: services.bodyLimit)
        try services.gate.require(.audit, context)
        let from = try Self.required(input, "from")
        let to = try Self.required(input, "to")
        let proof = try await services.history.consistencyProof(tenant: context.principal.tenant, from: from, to: to)
        return JSONResponse.make(
            JSONValue.object(["from": .integer(from), "to": .integer(to), "hashes": Self.base64(proof)]))
    }

    /// `?after=<tenant_seq>&limit=<n>`: the entries after `after` (0: from the start), each
    /// with its digest, the previous digest of its stream, the exact text its digest
    /// covers, and its append's signature and `signed_range`.
    func entries(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let input = RequestInput(request: request, context: context, bodyLimit: services.bodyLimit)
        try services.gate.require(.audit, context)
        // The whole log shows every space's events: a token narrowed to some spaces sees
        // checkpoints and proofs (hashes only), not these.
        guard context.principal.spaces == nil else {
            throw DomainError(
                .forbidden, "the tenant's whole log takes a token that is not narrowed to some spaces")
        }
        let after = try input.queryInteger("after", in: 0...Int64.max) ?? 0
        let limit = try input.queryInteger("limit", in: 1...Self.maxEntries) ?? Self.maxEntries
        let page = try await services.history.entries(tenant: context.principal.tenant, after: after, limit: Int(limit))
        services.budgets.charge(context, rows: page.count)
        let entries = page.map { entry -> JSONValue in
            .object([
                "tenant_seq": .integer(entry.tenantSeq), "position": .integer(entry.position),
                "digest": .string(Hex.encode(entry.digest)),
                "previous_digest": entry.previousDigest.map { .string(Hex.encode($0)) } ?? .null,
                "content": .string(entry.content),
                "signed_range": entry.signedRange.map {
                    .array([.integer($0.lowerBound), .integer($0.upperBound)])
                } ?? .null,
                "signature": entry.signature.map { .string(Data($0).base64EncodedString()) } ?? .null,
            ])
        }
        return JSONResponse.make(
            JSONValue.object([
                "tenant": .string(context.principal.tenant), "entries": .array(entries),
                "next_after": page.last.map { .integer($0.tenantSeq) } ?? .null,
            ]))
    }

    private static func required(_ input: RequestInput, _ name: String) throws -> Int64 {
        guard let value = try input.queryInteger(name, in: 1...Int64.max) else {
            throw DomainError(.malformedRequest, "query \(name): required, a whole number from 1", field: name)
        }
        return value
    }

    private static func base64(_ hashes: [Hash]) -> JSONValue {
        .array(hashes.map { .string(Data($0).base64EncodedString()) })
    }

    private static func text(_ body: String) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "text/plain; charset=utf-8"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: body)))
    }
}
