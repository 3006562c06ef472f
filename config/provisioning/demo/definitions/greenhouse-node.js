// A LoRaWAN greenhouse sensor's codec, in the LoRaWAN Payload Codec API form (TS013) that vendors
// ship and The Things Network's Device Repository collects: Vigil runs it as it is.
// fPort 1, 7 bytes, big-endian:
//   0-1  air temperature, signed int16, in 0.1 °C
//   2    relative humidity, in 0.5 %
//   3    soil moisture, in %
//   4-5  battery, in mV
//   6    flags: bit 0 = the irrigation valve is open
function decodeUplink(input) {
  if (input.fPort !== 1) return { errors: ['unknown fPort ' + input.fPort] };
  var b = input.bytes;
  if (b.length < 7) return { errors: ['expected 7 bytes, got ' + b.length] };
  var t = (b[0] << 8) | b[1];
  var warnings = [];
  var battery = (b[4] << 8) | b[5];
  if (battery < 2700) warnings.push('battery below 2.7 V');
  return {
    data: {
      temperature: (t > 0x7fff ? t - 0x10000 : t) / 10,
      humidity: b[2] / 2,
      soil: { moisture: b[3], valveOpen: (b[6] & 1) === 1 },
      battery_mv: battery,
    },
    warnings: warnings,
  };
}
