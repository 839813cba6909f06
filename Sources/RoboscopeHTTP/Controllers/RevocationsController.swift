import Hummingbird
import Logging
import RoboscopeDomain
import RoboscopePostgres

/// `/admin/revocations`: tokens that no longer hold (docs/operations.md, "Running many
/// customers"). An operator revokes any tenant's tokens, a subject's or a key's; an
/// administrator its own tenant's. Stored in Postgres, whose announcement puts it in force
/// on every instance within the listener's wake-up (REST 401 `token_revoked`, sockets
/// closed with 4001 `revoked`); lifted, never erased.
struct RevocationsController {
    let services: APIServices

    func create(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let input = RequestInput(request: request, context: context, bodyLimit: services.bodyLimit)
        // The scope first: a body is read only for a principal that may revoke anything.
        _ = try RevocationCommands.reach(of: context.principal)
        let revocation = try RevocationCommands.revocation(
            try await input.fields(), by: context.principal, id: .random(), now: WallClock.now()
        )
        let stored = try await services.revocations.create(
            revocation, RequestIdentity.commandContext(request, context), claim: context.idempotency
        ) { JSONResponse.answer($0, status: .created) }
        await applyHere()
        context.logger.warning(
            "tokens revoked",
            metadata: [
                "revocation": "\(revocation.id)", "tenant": "\(revocation.tenant ?? "")",
                "revoked_subject": "\(revocation.subject ?? "")", "kid": "\(revocation.keyID ?? "")",
                "issued_before": "\(revocation.issuedBefore.formatted(.wire))", "reason": "\(revocation.reason)",
                "by": "\(revocation.createdBy)",
            ])
        return JSONResponse.make(stored, status: .created)
    }

    func list(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let input = RequestInput(request: request, context: context, bodyLimit: services.bodyLimit)
        let tenant = try RevocationCommands.reach(of: context.principal).tenantFilter(asking: input.query("tenant"))
        let stored = try await services.revocations.list(tenant: tenant)
        return JSONResponse.make(RevocationListing(revocations: stored))
    }

    func lift(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let input = RequestInput(request: request, context: context, bodyLimit: services.bodyLimit)
        let id = try input.pathID()
        let reach = try RevocationCommands.reach(of: context.principal)
        let by = "\(context.principal.tenant)/\(context.principal.subject)"
        // Another tenant's revocation, to an administrator, is one that does not exist.
        guard
            let lifted = try await services.revocations.lift(
                id, tenant: reach.tenantFilter, by: by, RequestIdentity.commandContext(request, context),
                claim: context.idempotency, answer: { JSONResponse.answer($0) }
            )
        else {
            throw DomainError(.notFound, "revocation \(id) not found")
        }
        await applyHere()
        context.logger.warning("revocation lifted", metadata: ["revocation": "\(id)", "by": "\(by)"])
        return JSONResponse.make(lifted)
    }

    /// What is in force now, in this process at once: the instance that answered a revocation
    /// refuses its tokens from that answer on, not once its listener hears of it (the
    /// other instances do within the listener's wake-up). Stored already: should the read
    /// fail, the listener applies it as it does elsewhere.
    private func applyHere() async {
        guard let verifier = services.authentication, let inForce = try? await services.revocations.inForce() else {
            return
        }
        verifier.revocations.replace(with: inForce)
    }

    /// `{"revocations": [...]}`.
    struct RevocationListing: JSONWritable {
        let revocations: [StoredRevocation]

        func writeJSON(to writer: inout JSONWriter) {
            writer.object { writer in
                writer.key("revocations"); writer.array(revocations) { $0.value($1) }
            }
        }
    }
}
