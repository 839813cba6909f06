import Logging
import RoboscopePostgres

/// The catch-up reader's connections, owned by its thread: the primary's, made when a
/// page needs it, and with `--read-database-url` the standby's, retried at most every
/// `standbyRetry` after it failed.
struct CatchUpConnections {
    let primaryURL: String
    let standbyURL: String?
    let logger: Logger
    private var primaryConnection: PGConnection?
    private var standby: PGConnection?
    private var nextStandbyAttempt = ContinuousClock.now
    static let standbyRetry: Duration = .seconds(5)

    init(primaryURL: String, standbyURL: String?, logger: Logger) {
        self.primaryURL = primaryURL
        self.standbyURL = standbyURL
        self.logger = logger
    }

    /// The primary's connection, made if there is none.
    mutating func primary() throws -> PGConnection {
        if let primaryConnection { return primaryConnection }
        let fresh = try PGConnection(primaryURL)
        primaryConnection = fresh
        return fresh
    }

    /// Whether a failure came from Postgres being away (no connection, or a broken one)
    /// rather than from the page.
    var primaryIsLost: Bool { primaryConnection?.isBroken ?? true }

    mutating func dropPrimary() {
        primaryConnection = nil
    }

    /// The standby's connection for this catch-up: decided on its first page (its
    /// standby's head equal to the primary's at the grant), kept for the rest.
    mutating func reader(for progress: ConnectionCatchUps.Progress, primary: PGConnection) -> PGConnection {
        let first = progress.onStandby == nil
        if standby == nil, let standbyURL, ContinuousClock.now >= nextStandbyAttempt {
            do {
                standby = try PGConnection(standbyURL)
            } catch {
                dropStandby(error)
            }
        }
        guard let standby else {
            if first { StandbyReads.count("websocket", .primary) }
            return primary
        }
        guard first else { return standby }
        do {
            let standbyHead = try DeliveryReader.head(of: progress.topic, until: progress.until, on: standby)
            if StandbyReads.mayRead(primaryHead: progress.head, standbyHead: standbyHead) {
                StandbyReads.count("websocket", .standby)
                return standby
            }
        } catch {
            dropStandby(error)
        }
        StandbyReads.count("websocket", .primary)
        return primary
    }

    mutating func dropStandby(_ error: any Error) {
        if standby != nil || ContinuousClock.now >= nextStandbyAttempt {
            logger.warning(
                "standby unreachable for catch-ups; reading them on the primary", metadata: ["error": "\(error)"])
        }
        standby = nil
        nextStandbyAttempt = ContinuousClock.now + Self.standbyRetry
    }
}
