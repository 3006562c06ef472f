/**
 * The MQTT 3.1.1 codes of the broker's refusals, as a client sees them: mqtt.js rejects a connect
 * with an error whose `code` is the CONNACK return code, and a subscribe with an error carrying
 * the SUBACK packet (`packet.granted`: a code per topic filter).
 */

/** CONNACK return code 4: bad user name or password (the key is not valid). */
export const CONNACK_BAD_CREDENTIALS = 4;

/** SUBACK return code 0x80: the subscription is refused. */
export const SUBACK_FAILURE = 0x80;
