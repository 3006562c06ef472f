// Parser of the ComfortSensors definition. The gateway body is JSON such as
// {"deviceName":"device_1_hallway","Temperature":21.4,"Humidity":45.2,...}; lowercase names
// (what the pre-parser example forwards) are accepted too.
const DATA_POINTS = ['Temperature', 'Humidity', 'Illuminance', 'Battery', 'CO2', 'Occupancy'];

function parsePayload(payloadStr, payloadRaw) {
  const body = JSON.parse(payloadStr);
  const result = {};
  for (const name of DATA_POINTS) {
    const value = body[name] !== undefined ? body[name] : body[name.toLowerCase()];
    if (value !== undefined) result[name] = value;
  }
  return result;
}
