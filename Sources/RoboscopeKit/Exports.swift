// The geometry the kit's models use (`Point3`, `MarkerMeasurements`, `PlanePoint`,
// `DistanceTicks`) comes with it: an app imports RoboscopeKit alone.
@_exported import RoboscopeGeometry
// So does the wire vocabulary the server shares (`JSONValue`).
@_exported import RoboscopeWire
// And verifiable history's checks (`Checkpoint`, `NoteVerifier`, `LogAudit`, RFC 9162's proofs).
@_exported import RoboscopeProofs
