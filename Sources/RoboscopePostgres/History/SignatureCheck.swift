import RoboscopeDomain
import RoboscopeProofs

/// Checks the service's signatures over the events of a scope (verifiable history): each
/// append's signature against the digests its range holds now, and every event covered
/// by one. What `/integrity` and `roboscope verify --chain` report next to the chain.
public enum SignatureCheck {
    public struct Report: Sendable, Equatable {
        /// Appends whose signature was checked.
        public var appends: Int64
        /// Events of the scope no valid signature covers.
        public var invalidEvents: Int64
        /// The first of them, by position.
        public var first: Problem?
    }

    public struct Problem: Sendable, Equatable, CustomStringConvertible {
        /// Nil for an append none of whose events is left.
        public var position: Int64?
        public var tenantSeq: Int64?
        public var problem: String

        public var description: String {
            let place = [position.map { "position \($0)" }, tenantSeq.map { "tenant_seq \($0)" }].compactMap { $0 }
            return "\(place.joined(separator: ", ")): \(problem)"
        }
    }

    public static func check(
        _ scope: HashChain.Scope, verifier: NoteVerifier, on connection: PGConnection
    ) throws
        -> Report
    {
        // An append's signature with its range (`tenant_seq`: the range's first) and the
        // range's digests as the database holds them; or, `tenant` null, an unsigned
        // event: only its place.
        enum Column: Int, SelectedColumn {
            case position, tenantSeq, tenant, lastSeq, signature, digests, events

            var sql: String {
                switch self {
                case .position: "r.position"
                case .tenantSeq: "r.first_seq"
                case .tenant: "r.tenant"
                case .lastSeq: "r.last_seq"
                case .signature: "r.signature"
                case .digests:
                    """
                    (SELECT string_agg(e.tenant_seq || ' ' || encode(e.hash, 'hex'), ',' ORDER BY e.tenant_seq)
                     FROM eventlog.events e
                     WHERE e.tenant = r.tenant AND e.tenant_seq BETWEEN r.first_seq AND r.last_seq)
                    """
                case .events:
                    """
                    greatest(1, (SELECT count(*) FROM covered c
                                 WHERE c.tenant = r.tenant AND c.tenant_seq BETWEEN r.first_seq AND r.last_seq))
                    """
                }
            }
        }
        // Each event of the scope with the append signature that covers it (if any), and
        // for each signature the digests of its whole range, as the database holds them.
        let result = try connection.query(
            """
            WITH scoped AS (
                SELECT e.position, e.tenant, e.tenant_seq FROM eventlog.events e
                WHERE ($1::uuid IS NULL OR e.work_session_id = $1) AND ($2::uuid IS NULL OR e.space_id = $2)
            ),
            covered AS (
                SELECT x.position, x.tenant, x.tenant_seq, s.first_seq, s.last_seq, s.signature
                FROM scoped x
                LEFT JOIN LATERAL (
                    SELECT * FROM eventlog.append_signatures s
                    WHERE s.tenant = x.tenant AND s.first_seq <= x.tenant_seq ORDER BY s.first_seq DESC LIMIT 1
                ) AS s ON s.last_seq >= x.tenant_seq
            ),
            -- The whole log's check takes every signature, so that an append whose
            -- events were all deleted is found too.
            ranges AS (
                SELECT s.tenant, s.first_seq, s.last_seq, s.signature,
                       (SELECT min(e.position) FROM eventlog.events e
                        WHERE e.tenant = s.tenant AND e.tenant_seq BETWEEN s.first_seq AND s.last_seq) AS position
                FROM eventlog.append_signatures s
                WHERE ($1::uuid IS NULL AND $2::uuid IS NULL)
                   OR EXISTS (SELECT 1 FROM covered c WHERE c.tenant = s.tenant AND c.first_seq = s.first_seq)
            )
            -- In `Column`'s order: the place, then nulls.
            SELECT c.position, c.tenant_seq, NULL, NULL, NULL, NULL, NULL
            FROM covered c WHERE c.signature IS NULL
            UNION ALL
            SELECT \(Column.selectList)
            FROM ranges r
            """,
            scope.parameters)
        var report = Report(appends: 0, invalidEvents: 0, first: nil)
        func found(_ problem: Problem, events: Int64) {
            report.invalidEvents += events
            let order = { (problem: Problem) in (problem.position ?? .max, problem.tenantSeq ?? .max) }
            if report.first.map({ order(problem) < order($0) }) ?? true { report.first = problem }
        }
        for index in 0..<result.rowCount {
            let row = RowReader(result, row: index, source: "eventlog.append_signatures")
            let position = try row.optionalInt64(Column.position)
            let number = try row.optionalInt64(Column.tenantSeq)
            guard let tenant = row.optionalText(Column.tenant) else {
                found(
                    Problem(position: position, tenantSeq: number, problem: "no signature of the service covers it"),
                    events: 1)
                continue
            }
            report.appends += 1
            let last = try row.int64(Column.lastSeq)
            let signature = try row.bytea(Column.signature)
            let entries = (row.optionalText(Column.digests) ?? "").split(separator: ",").compactMap {
                item -> AppendStatement.Entry? in
                let parts = item.split(separator: " ")
                guard parts.count == 2, let seq = Int64(parts[0]), let digest = Hex.decode(String(parts[1])) else {
                    return nil
                }
                return .init(tenantSeq: seq, digest: digest)
            }
            let statement = AppendStatement(tenant: tenant, entries: entries)
            let complete = Int64(entries.count) == last - (number ?? last) + 1
            guard complete, verifier.isValid(signature: signature, of: statement.text) else {
                found(
                    Problem(
                        position: position, tenantSeq: number,
                        problem: complete
                            ? "its append's signature does not verify" : "its append's events are not all there"),
                    events: try row.int64(Column.events))
                continue
            }
        }
        return report
    }
}
