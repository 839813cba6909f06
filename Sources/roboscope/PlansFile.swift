import Foundation
import Logging
import RoboscopeAuth
import RoboscopeDomain
import ServiceLifecycle
import Synchronization

/// `--tenant-plans-file`: read at start (a file that does not parse refuses the start,
/// naming the field), then looked at every second and read again when it changed; a file
/// that no longer parses keeps the plans in force, logged at `error`.
final class PlansFile: Service, Sendable {
    let path: String
    let plans: TenantPlans
    let logger: Logger
    private let stamp = Mutex<Date?>(nil)

    init(path: String, logger: Logger) throws {
        self.path = path
        self.logger = logger
        stamp.withLock { $0 = KeySetSource.modified(path) }
        plans = TenantPlans(try Self.read(path))
        logger.info(
            "tenant plans in force", metadata: ["file": "\(path)", "tenants": "\(plans.current.tenants.count)"])
    }

    static func read(_ path: String) throws -> PlanBook {
        let data = try SettingsFile.read(path)
        guard let document = try? JSONParser.parse(data) else { throw PlanError("\(path): not JSON") }
        do {
            return try PlanBook.parse(document)
        } catch let error as PlanError {
            throw PlanError("\(path): \(error.description)")
        }
    }

    func run() async throws {
        await cancelWhenGracefulShutdown { [self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                let now = KeySetSource.modified(path)
                guard now != stamp.withLock({ $0 }) else { continue }
                stamp.withLock { $0 = now }
                do {
                    plans.replace(with: try Self.read(path))
                    logger.info(
                        "tenant plans reloaded",
                        metadata: ["file": "\(path)", "tenants": "\(plans.current.tenants.count)"])
                } catch {
                    logger.error(
                        "tenant plans reload failed; keeping the plans in force", metadata: ["error": "\(error)"])
                }
            }
        }
    }
}
