/**
 * LoRaWAN network servers' messages as they post them, for the tests and the demo. Shapes follow the published
 * formats: The Things Stack v3 "Data Formats" (integrations/data-formats: uplink and join-accept
 * messages of its webhooks) and ChirpStack v4 "Event types" (integrations/events: the JSON encoding
 * of `up`, `status`, `join`, `log` events, the same on its HTTP and MQTT integrations). Both leave
 * out fields whose value is 0, "" or false.
 */

export interface FrameOptions {
  deviceId: string;
  devEui: string;
  bytes: readonly number[];
  fPort?: number;
  /** Left out when 0, as the servers do. */
  fCnt?: number;
  receivedAt: string;
  /** Per gateway that heard the frame. */
  gateways?: { rssi: number; snr: number }[];
  spreadingFactor?: number;
  /** Envelope fields that differ between deliveries of the same uplink. */
  correlationId?: string;
}

const base64 = (bytes: readonly number[]) => Buffer.from(bytes).toString('base64');

/** A The Things Stack v3 webhook uplink message. */
export function ttsUplink(o: FrameOptions): Record<string, unknown> {
  const gateways = o.gateways ?? [{ rssi: -42, snr: 9.25 }];
  return {
    end_device_ids: {
      device_id: o.deviceId,
      application_ids: { application_id: 'vigil-test-app' },
      dev_eui: o.devEui.toUpperCase(),
      join_eui: '800000000000000C',
      dev_addr: '00BCB929',
    },
    correlation_ids: [o.correlationId ?? 'as:up:01E0Y1M0QZ6X5J4ZQZ9K2G1G2H'],
    received_at: o.receivedAt,
    uplink_message: {
      session_key_id: 'AXA50...',
      ...(o.fPort === undefined || o.fPort === 0 ? {} : { f_port: o.fPort }),
      ...(o.fCnt ? { f_cnt: o.fCnt } : {}),
      frm_payload: base64(o.bytes),
      rx_metadata: gateways.map((g, i) => ({
        gateway_ids: { gateway_id: `gtw${i + 1}`, eui: `9C5C8E00001A05C${i}` },
        time: o.receivedAt,
        timestamp: 2463457000 + i,
        rssi: g.rssi,
        channel_rssi: g.rssi,
        snr: g.snr,
        uplink_token: 'ChIKEAoOZ3R3MRIIAAAAAAAAAAE=',
        channel_index: 2,
      })),
      settings: {
        data_rate: {
          lora: { bandwidth: 125000, spreading_factor: o.spreadingFactor ?? 7, coding_rate: '4/5' },
        },
        frequency: '868100000',
        timestamp: 2463457000,
      },
      received_at: o.receivedAt,
      consumed_airtime: '0.061696s',
      network_ids: { net_id: '000013', tenant_id: 'ttn', cluster_id: 'eu1' },
    },
  };
}

/** A The Things Stack v3 join-accept message. */
export function ttsJoinAccept(deviceId: string, devEui: string): Record<string, unknown> {
  return {
    end_device_ids: {
      device_id: deviceId,
      application_ids: { application_id: 'vigil-test-app' },
      dev_eui: devEui.toUpperCase(),
      join_eui: '800000000000000C',
      dev_addr: '00BCB929',
    },
    correlation_ids: ['as:up:01E0Y1M0QZ6X5J4ZQZ9K2G1G2H'],
    received_at: '2026-12-02T06:00:00.123456789Z',
    join_accept: { session_key_id: 'AXBSH1Pk6Z0G166...', received_at: '2026-12-02T06:00:00.100Z' },
  };
}

const deviceInfo = (deviceName: string, devEui: string) => ({
  tenantId: '52f14cd4-c6f1-4fbd-8f87-4025e1d49242',
  tenantName: 'ChirpStack',
  applicationId: '17c82e96-be03-4f38-aef3-f83d48582d97',
  applicationName: 'Vigil test application',
  deviceProfileId: '14855bf7-d10d-4aee-b618-ebfcb64dc7ad',
  deviceProfileName: 'Test profile',
  deviceName,
  devEui: devEui.toLowerCase(),
  tags: {},
});

/** A ChirpStack v4 `up` event. */
export function chirpstackUp(o: FrameOptions): Record<string, unknown> {
  const gateways = o.gateways ?? [{ rssi: -57, snr: 10.5 }];
  return {
    deduplicationId: o.correlationId ?? '3ac7e3c4-4401-4b8d-9386-a5c902f9202d',
    time: o.receivedAt,
    deviceInfo: deviceInfo(o.deviceId, o.devEui),
    devAddr: '00189440',
    adr: true,
    dr: 5,
    ...(o.fCnt ? { fCnt: o.fCnt } : {}),
    ...(o.fPort === undefined || o.fPort === 0 ? {} : { fPort: o.fPort }),
    data: base64(o.bytes),
    rxInfo: gateways.map((g, i) => ({
      gatewayId: `0016c001f153a14${i}`,
      uplinkId: 4217106255 + i,
      rssi: g.rssi,
      snr: g.snr,
      context: 'E3OWOQ==',
      metadata: { region_name: 'eu868', region_common_name: 'EU868' },
    })),
    txInfo: {
      frequency: 867100000,
      modulation: {
        lora: { bandwidth: 125000, spreadingFactor: o.spreadingFactor ?? 7, codeRate: 'CR_4_5' },
      },
    },
  };
}

/** A ChirpStack v4 `status` event (the device's answer to a DevStatusReq). */
export function chirpstackStatus(
  deviceName: string,
  devEui: string,
  time: string,
  status: { margin: number; batteryLevel?: number; externalPowerSource?: boolean },
): Record<string, unknown> {
  return {
    deduplicationId: 'c9dbe358-2578-4fb7-b295-66b44edc45a6',
    time,
    deviceInfo: deviceInfo(deviceName, devEui),
    margin: status.margin,
    ...(status.externalPowerSource ? { externalPowerSource: true } : {}),
    ...(status.batteryLevel === undefined
      ? { batteryLevelUnavailable: true }
      : { batteryLevel: status.batteryLevel }),
  };
}

/** A ChirpStack v4 `join` event. */
export function chirpstackJoin(deviceName: string, devEui: string): Record<string, unknown> {
  return {
    deduplicationId: 'c9dbe358-2578-4fb7-b295-66b44edc45a6',
    time: '2026-12-02T06:00:00.000000000+00:00',
    deviceInfo: deviceInfo(deviceName, devEui),
    devAddr: '00189440',
  };
}

/** A ChirpStack v4 `log` event. */
export function chirpstackLog(deviceName: string, devEui: string): Record<string, unknown> {
  return {
    time: '2026-12-02T06:00:00.000000000+00:00',
    deviceInfo: deviceInfo(deviceName, devEui),
    level: 'ERROR',
    code: 'UPLINK_CODEC',
    description: 'Error executing codec',
    context: { deduplication_id: '3ac7e3c4-4401-4b8d-9386-a5c902f9202d' },
  };
}
