// The geometry the kit's models use (`Point3`, `MarkerMeasurements`, `PlanePoint`,
// `DistanceTicks`) comes with it: an app imports RoboscopeKit alone.
@_exported import RoboscopeGeometry
