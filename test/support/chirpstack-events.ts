/**
 * ChirpStack v4 integration events as its JSON encoding writes them (the HTTP integration's
 * bodies, the MQTT integration's payloads): `deviceInfo`, then the fields of each event type.
 * ChirpStack leaves out fields whose value is 0, "" or false; `statusEvent` gives its two flags
 * as false all the same, which a reader must take as well as their absence.
 */
import { randomUUID } from 'node:crypto';

/** The `deviceInfo` of ChirpStack v4's events. */
function deviceInfo(applicationId: string, deviceName: string, devEui: string) {
  return {
    tenantId: '52f14cd4-c6f1-4fbd-8f87-4025e1d49242',
    tenantName: 'ChirpStack',
    applicationId,
    applicationName: 'Sensors',
    deviceProfileId: '14855bf7-d10d-4aee-b618-ebfcb64dc7ad',
    deviceProfileName: 'EU868 class A',
    deviceName,
    devEui,
    deviceClassEnabled: 'CLASS_A',
    tags: { site: 'hq' },
  };
}

/** A ChirpStack v4 `up` event (JSON encoding) of frame `fCnt` carrying `bytes`. */
export function upEvent(
  applicationId: string,
  deviceName: string,
  devEui: string,
  fCnt: number,
  bytes: number[],
) {
  return {
    deduplicationId: randomUUID(),
    time: new Date().toISOString(),
    deviceInfo: deviceInfo(applicationId, deviceName, devEui),
    devAddr: '00189440',
    adr: true,
    dr: 5,
    fCnt,
    fPort: 2,
    confirmed: false,
    data: Buffer.from(bytes).toString('base64'),
    rxInfo: [
      {
        gatewayId: '0016c001f153a14c',
        uplinkId: 4217106255,
        rssi: -57,
        snr: 9.5,
        channel: 2,
        context: 'E3OWOQ==',
        metadata: { region_config_id: 'eu868', region_common_name: 'EU868' },
        crcStatus: 'CRC_OK',
      },
    ],
    txInfo: {
      frequency: 868500000,
      modulation: { lora: { bandwidth: 125000, spreadingFactor: 7, codeRate: 'CR_4_5' } },
    },
  };
}

/** A ChirpStack v4 `status` event: the device's battery and link margin. */
export function statusEvent(applicationId: string, deviceName: string, devEui: string) {
  return {
    deduplicationId: randomUUID(),
    time: new Date().toISOString(),
    deviceInfo: deviceInfo(applicationId, deviceName, devEui),
    margin: 7,
    externalPowerSource: false,
    batteryLevelUnavailable: false,
    batteryLevel: 87.5,
  };
}

/** A ChirpStack v4 `join` event. */
export function joinEvent(applicationId: string, deviceName: string, devEui: string) {
  return {
    deduplicationId: randomUUID(),
    time: new Date().toISOString(),
    deviceInfo: deviceInfo(applicationId, deviceName, devEui),
    devAddr: '00189440',
  };
}
