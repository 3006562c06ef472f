// Pre-parser example (docs/sandbox.md): one upload carrying several timestamped measurements of a
// device becomes one reading per measurement.
// {"devEUI":"device_3_reception","measurements":[{"temperature":22.5,"humidity":45.2,"timestampInMs":1727085443874}]}
function parsePayload(payloadStr) {
  const j = JSON.parse(payloadStr);
  return j.measurements.map((m) => ({
    deviceName: j.devEUI,
    time: m.timestampInMs,
    payload: { Temperature: m.temperature, Humidity: m.humidity },
  }));
}
