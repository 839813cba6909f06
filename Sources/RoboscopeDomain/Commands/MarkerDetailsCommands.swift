/// Turns marker details requests into events on the `marker_details` stream.
public enum MarkerDetailsCommands {
    /// `PUT`: figures the client gives replace computed ones; `custom_props` replaces
    /// the stored ones when given and is kept otherwise.
    public static func put(
        _ current: MarkerWithDetails, session: WorkSessionPlace, _ body: FieldReader, _ context: CommandContext
    ) throws -> (MarkerDetails, AppendBatch) {
        var measurements = current.details?.measurements ?? MarkerMeasurements(corners: current.marker.corners)
        for field in MarkerMeasurements.fieldNames where body.contains(field) {
            guard let value = try body.finiteNumber(field) else {
                throw DomainError.invalid(field, "must not be null")
            }
            measurements[fieldName: field] = value
        }
        var customProps = current.details?.customProps ?? [:]
        if body.contains("custom_props") {
            customProps = try body.object("custom_props") ?? [:]
        }
        let details = MarkerDetails(
            markerID: current.marker.id, measurements: measurements, customProps: customProps,
            createdAt: current.details?.createdAt ?? context.now, updatedAt: context.now
        )
        let event = PendingEvent(
            stream: StreamRef(.markerDetails, details.markerID), expectedVersion: expectedVersion(current.details),
            type: .markerDetailsUpdated, payload: .markerDetails(details), metadata: context.metadata()
        )
        return (details, MarkerCommands.batch([event], current, session, context))
    }

    /// `POST …/details/calculate`: compute from the points now, keeping `custom_props`.
    public static func calculate(
        _ current: MarkerWithDetails, session: WorkSessionPlace, _ context: CommandContext
    ) -> (MarkerDetails, AppendBatch) {
        let result = calculated(current.marker, keeping: current.details, now: context.now, causedBy: nil, context)
        return (result.details, MarkerCommands.batch([result.event], current, session, context))
    }

    public static func delete(
        _ current: MarkerWithDetails, session: WorkSessionPlace, _ context: CommandContext
    ) throws -> AppendBatch {
        guard current.details != nil else {
            throw DomainError(.notFound, "marker \(current.marker.id) has no details")
        }
        var event = deletion(current.marker.id, causedBy: nil, context)
        event.expectedVersion = expectedVersion(current.details)
        return MarkerCommands.batch([event], current, session, context)
    }

    static func calculated(
        _ marker: Marker, keeping existing: MarkerDetails?, now: Timestamp, causedBy cause: PendingEvent?,
        _ context: CommandContext
    ) -> (details: MarkerDetails, event: PendingEvent) {
        let details = MarkerDetails(
            markerID: marker.id, measurements: MarkerMeasurements(corners: marker.corners),
            customProps: existing?.customProps ?? [:], createdAt: existing?.createdAt ?? now, updatedAt: now
        )
        let event = PendingEvent(
            stream: StreamRef(.markerDetails, marker.id),
            expectedVersion: cause?.type == .markerCreated ? .noStream : expectedVersion(existing),
            type: .markerDetailsCalculated, payload: .markerDetails(details),
            metadata: context.metadata(causedBy: cause?.eventID)
        )
        return (details, event)
    }

    static func deletion(_ markerID: EntityID, causedBy cause: PendingEvent?, _ context: CommandContext) -> PendingEvent
    {
        PendingEvent(
            stream: StreamRef(.markerDetails, markerID), expectedVersion: .any, type: .markerDetailsDeleted,
            payload: .deleted(Deletion(id: markerID, cascadedFrom: cause?.stream.name)),
            metadata: context.metadata(causedBy: cause?.eventID)
        )
    }

    /// Details that exist are written at their version; absent ones after whatever the
    /// stream holds (a deletion), with the batch checking that they are still absent.
    static func expectedVersion(_ existing: MarkerDetails?) -> ExpectedVersion {
        existing.map { .exactly($0.version) } ?? .any
    }
}
