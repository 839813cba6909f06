// The example of docs/client-kit.md, compiled here and run against the real server
// (DocExampleTests); DocExampleTests also checks that the docs show this code as it is.
// example:begin
import Foundation
import Observation
import RoboscopeKit

@MainActor @Observable final class MarkerList {
    var markers: [Marker] = []
    var fromCache = true
    var pending = 0
    private let session: OfflineWorkSession

    init(client: RoboscopeClient, store: OfflineStore, sessionID: UUID) {
        session = OfflineWorkSession(client: client, store: store, workSessionID: sessionID)
    }

    func run() async {  // .task { await list.run() } in the view
        await session.start()
        for await state in session.observe() {  // each write, settlement, live event
            (markers, fromCache, pending) = (state.markers, state.fromCache, state.pendingWrites)
        }
        await session.stop()
    }

    func add(_ marker: NewMarker) async throws {
        try await session.create(marker)  // on disk when this returns
    }

    func move(_ marker: Marker, to corners: [Point3]) async throws {
        try await session.update(marker.id, MarkerPatch(corners: corners, version: marker.version))
    }

    func networkIsBack() {  // from NWPathMonitor
        session.reconnectNow()
    }
}
// example:end
