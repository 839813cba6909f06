import RoboscopeDomain
import RoboscopePostgres
import WebSocketCodec

/// The subscription protocol on one shard (docs/websocket.md): each client message
/// routed by `ClientOps`, charged to the connection's, subject's and tenant's budgets
/// (`OpBudgets`), and served: `auth` (a first token, or a refresh that may narrow what the
/// connection keeps), `subscribe` (asked of the tailer), `unsubscribe`, `presence` (its
/// session looked up, then held by the presence thread). On the shard's loop, like the
/// rest of it; the tailer's answers come back as `ShardMessage`s.
extension Shard {
    /// A message from the connection: routed (`ClientOps.route`), charged to the
    /// budgets, and served.
    func received(_ opcode: Opcode, _ payload: [UInt8], from connection: Connection) {
        let request: ClientRequest
        switch ClientOps.route(opcode, payload, authenticated: connection.isAuthenticated) {
        // ClientOps closes only a connection that has not authenticated yet.
        case .close(let code, let reason): return connection.refuse(.missingToken, closing: code, reason)
        case .reply(let error): return reply(connection, ServerMessage.error(error))
        case .serve(let parsed): request = parsed
        }
        if let refusal = overBudget(connection) {
            hub.metrics.rateLimited()
            return reply(connection, ServerMessage.error(refusal))
        }
        switch request {
        case .auth(let token):
            authenticate(connection, token: token)
        case .subscribe(let topic, let since, let presenceChanges):
            subscribe(connection, topic, since: since, presenceChanges: presenceChanges)
        case .unsubscribe(let topic):
            unsubscribe(connection, topic)
        case .presence(let session, let user):
            presence(connection, session, user: user)
        }
    }

    /// Every op costs a token of the connection, and with authentication on of its
    /// subject and tenant (`OpBudgets`); nil when each had one.
    private func overBudget(_ connection: Connection) -> DomainError? {
        hub.budgets.take(
            &connection.opBudget, principal: connection.isAuthenticated ? connection.principal : nil,
            now: Shard.seconds(now))
    }

    /// The `auth` op: the first token of a connection upgraded without one, or a fresh
    /// token for an open one. A refresh keeps the subject and tenant (else 4003), and
    /// ends the subscriptions and presence the new token no longer covers.
    private func authenticate(_ connection: Connection, token: String) {
        guard let verifier = configuration.authentication else {
            // Nothing to check: say whom the connection acts for, as with a token.
            let principal = connection.principal
            return reply(
                connection,
                ServerMessage.authenticated(subject: principal.subject, tenant: principal.tenant, expiresAt: nil))
        }
        let principal: Principal
        switch policy.verified({ try verifier.verify(token: token) }) {
        case .success(let verified): principal = verified
        case .failure(let refusal): return connection.refuse(refusal.kind, closing: .unauthorized, refusal.reason)
        }
        let previous = connection.principal
        let wasAuthenticated = connection.isAuthenticated
        if wasAuthenticated, principal.subject != previous.subject || principal.tenant != previous.tenant {
            return connection.refuse(
                .forbidden, closing: .forbidden, "a refreshed token must name the same subject and tenant")
        }
        if !wasAuthenticated, let refusal = tenantIsFull(principal.tenant) {
            return connection.refuse(.rateLimited, closing: .tryAgainLater, refusal)
        }
        connection.authenticated(as: principal, validUntil: validUntil(of: principal))
        reply(
            connection,
            ServerMessage.authenticated(
                subject: principal.subject, tenant: principal.tenant, expiresAt: principal.expiresAt))
        if wasAuthenticated, principal.narrows(previous) {
            withdraw(from: connection)
        }
    }

    /// Ends what the connection's (narrowed) principal no longer covers: subscriptions
    /// it may not read (`unsubscribed`, reason `forbidden`) and presence it may not hold.
    /// Each place is looked up once more, and judged by the principal the connection has
    /// when the answer comes (a later refresh may have widened it again).
    private func withdraw(from connection: Connection) {
        let id = connection.id
        for topic in connection.subscriptions.active.union(connection.subscriptions.pending.keys) {
            lookUp(Places.stream(of: topic)) { shard, place in
                guard let connection = shard.connection(id), connection.isOpen else { return }
                if connection.principal.may(.read, in: place) { return }
                switch connection.subscriptions.unsubscribed(topic) {
                case .unlink: shard.unlink(connection, from: topic)
                case .cancelled: break
                case .notSubscribed: return
                }
                shard.reply(connection, ServerMessage.unsubscribed(topic, reason: ErrorCode.forbidden.rawValue))
            }
        }
        for key in connection.presence {
            lookUp(StreamRef(.workSession, key.workSessionID)) { shard, place in
                guard let connection = shard.connection(id), connection.isOpen else { return }
                if connection.principal.may(.write, in: place) { return }
                guard connection.presence.remove(key) != nil else { return }
                shard.hub.presence.release(key)
            }
        }
    }

    /// Rule 5: presence acts for the subject, takes `write`, and a session the
    /// principal may not see is refused as an unknown one.
    private func presence(_ connection: Connection, _ session: EntityID, user: String?) {
        let principal = connection.principal
        let authenticated = configuration.authentication != nil
        if authenticated, let named = user, named != principal.subject {
            return reply(
                connection,
                ServerMessage.error(DomainError(.forbidden, "user_id: presence is for the token's subject only")))
        }
        guard let user = authenticated ? principal.subject : user else {
            return reply(connection, ServerMessage.error(DomainError.invalid("user_id", "is required")))
        }
        let key = PresenceKey(workSessionID: session, user: user)
        // Look-ups under way count: a burst of ops cannot queue more of them on the tailer.
        if let refusal = presenceCapped(connection, adding: key, pending: connection.presenceLookUps) {
            return reply(connection, ServerMessage.error(refusal))
        }
        connection.presenceLookUps += 1
        let id = connection.id
        lookUp(StreamRef(.workSession, session)) { shard, place in
            guard let connection = shard.connection(id), connection.isOpen else { return }
            connection.presenceLookUps -= 1
            // Judged by the principal of now: a refresh may have narrowed it meanwhile.
            do {
                try connection.principal.require(
                    .write, in: place,
                    otherwise: DomainError(
                        .notFound, "work session \(session) not found",
                        field: "work_session_id"))
            } catch let error as DomainError {
                return shard.reply(connection, ServerMessage.error(error))
            } catch {
                return
            }
            // Asked again while the look-up ran: the cap holds for what is inserted.
            if let refusal = shard.presenceCapped(connection, adding: key) {
                return shard.reply(connection, ServerMessage.error(refusal))
            }
            if connection.presence.insert(key).inserted {
                shard.hub.presence.hold(key, for: shard.mailbox, connectionID: connection.id)
            } else {
                shard.reply(connection, ServerMessage.present(workSessionID: session, user: user))
            }
        }
    }

    /// At most `--ws-max-presence` presences per connection (a session each with
    /// authentication on; without, a session and user each).
    private func presenceCapped(_ connection: Connection, adding key: PresenceKey, pending: Int = 0) -> DomainError? {
        guard !connection.presence.contains(key),
            connection.presence.count + pending >= configuration.maxPresencePerConnection
        else {
            return nil
        }
        return DomainError(
            .tooManyPresences, "at most \(configuration.maxPresencePerConnection) presences per connection",
            field: "work_session_id")
    }

    /// The presence thread found the session full: the connection does not hold `key`.
    func presenceRefused(_ key: PresenceKey, connectionID: UInt64) {
        guard let connection = connection(connectionID), connection.presence.remove(key) != nil else { return }
        reply(connection, ServerMessage.error(DomainError.presenceFull(configuration.presenceMaxUsers)))
    }

    private func subscribe(_ connection: Connection, _ topic: Topic, since: Int64?, presenceChanges: Bool) {
        switch connection.subscriptions.requested(topic, presenceChanges: presenceChanges) {
        case .failure(let refusal):
            reply(connection, ServerMessage.error(refusal, topic: topic))
        case .success(let grant):
            hub.tailer.request(
                SubscribeRequest(
                    mailbox: mailbox, connectionID: connection.id, grant: grant, since: since,
                    principal: connection.principal))
        }
    }

    private func unsubscribe(_ connection: Connection, _ topic: Topic) {
        switch connection.subscriptions.unsubscribed(topic) {
        case .unlink:
            unlink(connection, from: topic)
        case .cancelled:
            break
        case .notSubscribed:
            return reply(
                connection,
                ServerMessage.error(
                    DomainError(.notSubscribed, "not subscribed to \(topic)", field: "topic"), topic: topic))
        }
        reply(connection, ServerMessage.unsubscribed(topic))
    }
}
