import ArgumentParser
import Foundation
import RoboscopeDomain
import RoboscopePostgres

/// `roboscope replay`: the state at a moment, reconstructed from the event log alone
/// (the projections are not read).
struct Replay: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the state at a time or position, from the event log alone.")

    enum Format: String, ExpressibleByArgument, CaseIterable { case json, table }

    @OptionGroup var common: CommonOptions

    @Option(name: .customLong("until"), help: "An RFC 3339 time or a log position: events at or before it count.")
    var until: String

    @Option(name: .customLong("work-session"), help: "Only this work session and its markers.")
    var workSession: String?

    @Option(name: .customLong("space"), help: "Only this space, its work sessions and their markers.")
    var space: String?

    @Option(name: .customLong("tenant"), help: "Only the spaces of this tenant (and what is under them).")
    var tenant: String?

    @Option(name: .customLong("format"), help: "json or table (default json).")
    var format: Format = .json

    func validate() throws {
        guard AsOf(until) != nil else {
            throw ValidationError("--until must be an RFC 3339 time or a position (0 or more)")
        }
        if workSession != nil && space != nil { throw ValidationError("give --work-session or --space, not both") }
        if let workSession, EntityID(workSession) == nil { throw ValidationError("--work-session must be a UUID") }
        if let space, EntityID(space) == nil { throw ValidationError("--space must be a UUID") }
        if let tenant, !TenantName.isValid(tenant) {
            throw ValidationError("--tenant must be 1 to 128 characters of A-Z a-z 0-9 . _ : -")
        }
        if tenant != nil && workSession != nil { throw ValidationError("give --work-session or --tenant, not both") }
    }

    func run() async throws {
        let logger = common.logger("roboscope.replay")
        _ = try await common.connect(logger: logger)
        let pool = PostgresPool(url: common.databaseURL, size: 1, logger: logger)
        defer { pool.shutdownBlocking() }
        let travel = TimeTravel(pool: pool)
        let moment = AsOf(until)!
        var state = ReplayedState(asOf: moment)
        do {
            if let workSession {
                let session = try await travel.workSession(EntityID(workSession)!, asOf: moment)
                state.sessions = [(session, try await travel.markers(workSessionID: session.id, asOf: moment))]
            } else {
                var spaces: [Space]
                if let space {
                    spaces = [try await travel.space(EntityID(space)!, asOf: moment)]
                } else {
                    spaces = try await travel.spaces(asOf: moment)
                }
                // A space's tenant never changes: filtering the replayed spaces is exact.
                spaces = spaces.filter { tenant == nil || $0.tenant == tenant }
                for space in spaces {
                    var sessions: [(WorkSession, [MarkerWithDetails])] = []
                    for session in try await travel.workSessions(spaceID: space.id, asOf: moment) {
                        sessions.append((session, try await travel.markers(workSessionID: session.id, asOf: moment)))
                    }
                    state.spaces.append((space, sessions))
                }
            }
        } catch let error as DomainError {
            FileHandle.standardError.write(Data("replay: \(error.message)\n".utf8))
            throw ExitCode(1)
        }
        print(format == .json ? String(decoding: state.jsonBytes(.wire), as: UTF8.self) : state.table())
    }
}
