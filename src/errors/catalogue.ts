/**
 * Every error code Vigil returns or records, with its HTTP status (where it meets HTTP) and whether
 * a retry can help. docs/errors.md is generated from this table, and a test keeps it current.
 */
export const ERROR_CODES = {
  // Gateway
  INVALID_JSON: {
    status: 400,
    retryable: false,
    description: 'The body of a JSON gateway path is not valid JSON.',
  },
  MISSING_DEVICE_NAME: {
    status: 400,
    retryable: false,
    description: 'The device name could not be found in the submission.',
  },
  INVALID_NETWORK_MESSAGE: {
    status: 400,
    retryable: false,
    description:
      'The body is not a message of the network server its path names (The Things Stack, ChirpStack): a field Vigil needs is missing or malformed, or ChirpStack’s `?event=` is missing.',
  },
  INVALID_API_KEY: { status: 401, retryable: false, description: 'The API key is unknown or revoked.' },
  NO_PREPARSER: {
    status: 409,
    retryable: false,
    description: 'A pre-parser gateway was used but the environment has no pre-parser.',
  },
  PAYLOAD_TOO_LARGE: {
    status: 413,
    retryable: false,
    description: 'The body exceeds VIGIL_BODY_LIMIT_BYTES.',
  },
  RATE_LIMITED: {
    status: 429,
    retryable: true,
    description:
      'Too many submissions for this API key, or too many parser runs (the console’s workbench, /definitions/run, /definitions/replay) for this console session, token or environment (VIGIL_WORKBENCH_RUNS_PER_MINUTE_PER_SESSION, …_PER_ENV); see Retry-After.',
  },
  BACKLOG_FULL: {
    status: 503,
    retryable: true,
    description:
      'The processing backlog is full for this environment (over its own cap, or its share of a full backlog); see Retry-After.',
  },
  UNAVAILABLE: {
    status: 503,
    retryable: true,
    description: 'Redis (or another required server) cannot be reached.',
  },
  // Both HTTP surfaces
  NOT_FOUND: { status: 404, retryable: false, description: 'No such path.' },
  METHOD_NOT_ALLOWED: {
    status: 405,
    retryable: false,
    description: 'The path exists but not for this method.',
  },
  BAD_REQUEST: {
    status: 400,
    retryable: false,
    description:
      'The request itself is malformed: a path that is not valid percent-encoding, or a header given twice that must be given once.',
  },
  UNSUPPORTED_ENCODING: {
    status: 415,
    retryable: false,
    description:
      'The body has a Content-Encoding or charset that is not read (identity, gzip, deflate, br and zstd are; UTF-8 and Latin-1 text).',
  },
  INTERNAL: {
    status: 500,
    retryable: true,
    description: 'An unexpected fault; details are in the server log only.',
  },
  // Read API
  UNAUTHORIZED: {
    status: 401,
    retryable: false,
    description: 'Missing, invalid, expired or revoked bearer token.',
  },
  INVALID_CREDENTIALS: {
    status: 401,
    retryable: false,
    description: 'Wrong username, password or TOTP code.',
  },
  FORBIDDEN: {
    status: 403,
    retryable: false,
    description:
      'The token may not do this: the endpoint changes something (scope write) and the token only reads — a CLI token created without `--scope read,write`, or the login token of a viewer.',
  },
  MFA_REQUIRED: {
    status: 401,
    retryable: false,
    description: 'The user has MFA enabled and no TOTP code was given.',
  },
  ACCOUNT_DISABLED: {
    status: 401,
    retryable: false,
    description:
      'The username and password are right, but an administrator disabled the user (`/users/disable`, `vigil user disable`): they cannot sign in until enabled again.',
  },
  LOGIN_LOCKED: {
    status: 429,
    retryable: true,
    description: 'Too many failed logins for this username; see Retry-After.',
  },
  MISSING_ATTRIBUTE: {
    status: 400,
    retryable: false,
    description: 'A required request attribute is missing.',
  },
  INVALID_ATTRIBUTE: {
    status: 400,
    retryable: false,
    description: 'A request attribute has the wrong type or form.',
  },
  BATCH_TOO_LARGE: {
    status: 400,
    retryable: false,
    description: 'A batch request holds more than 1,000 items.',
  },
  DEVICE_NOT_FOUND: {
    status: 404,
    retryable: false,
    description: 'No such device in the caller’s environment.',
  },
  SENSOR_NOT_FOUND: { status: 404, retryable: false, description: 'No such data point on the device.' },
  ALARM_NOT_FOUND: {
    status: 404,
    retryable: false,
    description:
      'No open alarm for that device (Availability) or data point: it is in SUCCESS, its contact is not lost, or it is unknown.',
  },
  VERSION_NOT_FOUND: {
    status: 404,
    retryable: false,
    description: 'The definition has no version of that number.',
  },
  DEFINITION_NOT_FOUND: {
    status: 404,
    retryable: false,
    description: 'No such device definition visible to the caller.',
  },
  EXPORT_LIMIT_REACHED: {
    status: 429,
    retryable: true,
    description: 'The monthly export allowance is used; see Retry-After.',
  },
  STATE_LAYOUT_UNKNOWN: {
    status: 503,
    retryable: true,
    description:
      'Redis holds data in a layout this version of Vigil does not know: a newer version wrote it, or a migration has not run. Reads of it are refused, processing of it is retried, and a process refuses to start on a newer layout version.',
  },
  // Refused at start (configuration)
  CONFIG_INVALID: {
    status: 0,
    retryable: false,
    atStart: true,
    description:
      'A setting (environment variable) is invalid or unknown, or settings contradict each other. The message names each variable and what is wrong with it; the value of a secret is never shown, and a URL is shown without its user, password and query values.',
  },
  DEMO_SECRETS_KEY_REFUSED: {
    status: 0,
    retryable: false,
    atStart: true,
    description:
      'VIGIL_SECRETS_KEY is the public key of `npm run demo`, which only the demo (VIGIL_DEMO) accepts: set a key of your own.',
  },
  // Console
  CSRF_REJECTED: {
    status: 403,
    retryable: false,
    description:
      'A state-changing console request came without its session’s anti-forgery token, or from another site.',
  },
  SIGN_IN_THROTTLED: {
    status: 429,
    retryable: true,
    description:
      'Too many console sign-in attempts from this client address (VIGIL_CONSOLE_SIGN_IN_PER_MINUTE); see Retry-After.',
  },
  WORKBENCH_BUSY: {
    status: 503,
    retryable: true,
    description:
      'Parser trials (the console’s workbench, /definitions/run, /definitions/replay) have as many runs waiting as they take; try again shortly.',
  },
  TOO_MANY_STREAMS: {
    status: 429,
    retryable: true,
    description: 'This console session has as many live pages open as it may; close one.',
  },
  // Administration (CLI)
  INVALID_INPUT: {
    status: 400,
    retryable: false,
    description: 'A command argument or provisioning file is invalid.',
  },
  ALREADY_EXISTS: { status: 409, retryable: false, description: 'The thing to create exists already.' },
  IMPORT_REJECTED: {
    status: 400,
    retryable: false,
    description:
      'An import has rows that cannot be imported (listed in `error.failed`, with line, field, code and message); nothing was written.',
  },
  CONFLICT: {
    status: 409,
    retryable: false,
    description:
      'The record changed since the revision the update was based on (another change came first): read it again, and repeat the change on what it is now.',
  },
  DEV_EUI_TAKEN: {
    status: 409,
    retryable: false,
    description:
      'Another device of the environment has this DevEUI as its `devEui` label already (a DevEUI names one device): change or remove it there first.',
  },
  ENVIRONMENT_NOT_FOUND: { status: 404, retryable: false, description: 'No such environment.' },
  PREPARSER_NOT_FOUND: {
    status: 404,
    retryable: false,
    description:
      'The environment has no pre-parser (set one with `/preparser/set` or `vigil preparser set`).',
  },
  USER_NOT_FOUND: { status: 404, retryable: false, description: 'No such user in the environment.' },
  IN_USE: {
    status: 409,
    retryable: false,
    description: 'The thing to delete is still used (a definition by devices, a channel by routes).',
  },
  LAST_ADMIN: {
    status: 409,
    retryable: false,
    description:
      'The user is the environment’s last admin who can sign in, and the change (a demotion, disabling, deletion) would leave it with none: make another user admin first.',
  },
  CREDENTIAL_NOT_FOUND: {
    status: 404,
    retryable: false,
    description: 'No such API key or token in the environment.',
  },
  // Alerting
  CHANNEL_NOT_FOUND: {
    status: 404,
    retryable: false,
    description: 'No such notification channel in the environment.',
  },
  ROUTE_NOT_FOUND: { status: 404, retryable: false, description: 'No such route in the environment.' },
  NOTIFICATION_NOT_FOUND: {
    status: 404,
    retryable: false,
    description: 'No such failed notification in the environment (`vigil notify failed` lists them).',
  },
  SECRETS_KEY_MISSING: {
    status: 500,
    retryable: false,
    description:
      'VIGIL_SECRETS_KEY is not set (or not the key the secrets were stored with), so channel secrets cannot be stored or read.',
  },
  ADDRESS_NOT_ALLOWED: {
    status: 400,
    retryable: false,
    description:
      "A webhook or Slack URL reaches an address that is not public (loopback, private, link-local, unique-local or another special-purpose range), or its host cannot be resolved, and VIGIL_NOTIFY_ALLOWED_HOSTS does not admit it on the URL's port.",
  },
  DELIVERY_FAILED: {
    status: 0,
    retryable: true,
    description:
      'A notification attempt failed in a way a retry can mend (HTTP 408, 429, 5xx, timeout, network or SMTP 4xx); it is retried on the schedule of VIGIL_NOTIFY_RETRY_SCHEDULE.',
  },
  DELIVERY_REJECTED: {
    status: 0,
    retryable: false,
    description:
      'The receiver refused a notification for good (HTTP 3xx or 4xx other than 408/429, SMTP 5xx, address not allowed): kept as failed at once (`vigil notify retry` sends it again).',
  },
  // Ingestion log outcomes (processing)
  UNKNOWN_DEVICE: {
    status: 0,
    retryable: false,
    description: 'The payload names a device that does not exist; it is not stored.',
  },
  NETWORK_DEVICE_NAME_INVALID: {
    status: 0,
    retryable: false,
    description:
      'The network server’s device id is not a valid Vigil device name, and no device has the message’s DevEUI as its `devEui` label; it is not stored.',
  },
  AUTO_CREATE_LIMIT: {
    status: 0,
    retryable: false,
    description:
      'The payload names a device that does not exist, and the API key it came with has created as many devices as its auto-create rule allows (`maxDevices`); it is not stored.',
  },
  UNKNOWN_DATA_POINT: {
    status: 0,
    retryable: false,
    description: 'The parser returned a key that is not a data point of the definition (ignored).',
  },
  VALUE_CONVERSION_FAILED: {
    status: 0,
    retryable: false,
    description: 'A value could not be converted to its data point’s type (dropped).',
  },
  FUTURE_TIMESTAMP: {
    status: 0,
    retryable: false,
    description: 'The pre-parser, or a network server, set a time more than 5 minutes in the future.',
  },
  INVALID_TIMESTAMP: {
    status: 0,
    retryable: false,
    description: 'The pre-parser set a time that is not epoch milliseconds.',
  },
  TIMESTAMP_BEYOND_RETENTION: {
    status: 0,
    retryable: false,
    description:
      'The reading was measured longer ago than raw history keeps (VIGIL_RAW_RETENTION, less a minute); it is not stored.',
  },
  PREPARSER_BAD_RESULT: {
    status: 0,
    retryable: false,
    description:
      'The pre-parser returned something other than {deviceName, payload, time?} or an array of them.',
  },
  PARSER_TIMEOUT: { status: 0, retryable: false, description: 'User code exceeded its CPU time limit.' },
  PARSER_MEMORY: {
    status: 0,
    retryable: false,
    description:
      "User code exceeded its environment's isolate memory limit (that environment's isolate is replaced; no other environment's parsers are affected).",
  },
  PARSER_ERROR: {
    status: 0,
    retryable: false,
    description: 'User code threw, or does not compile (message carries line:column).',
  },
  PARSER_BAD_RESULT: {
    status: 0,
    retryable: false,
    description:
      "parsePayload returned something other than a plain object, or a device codec's decodeUplink returned no object, data that is not an object, or warnings or errors that are not arrays.",
  },
  PARSER_CODEC_ERRORS: {
    status: 0,
    retryable: false,
    description:
      "The device codec returned errors for the payload (decodeUplink's `errors`, joined with '; ' in the message).",
  },
  PARSER_CODEC_WARNINGS: {
    status: 0,
    retryable: false,
    description:
      'The device codec (`parserFormat: ts013`) returned warnings: its data was kept, and the entry, accepted, gives the warnings.',
  },
  PROCESSING_FAILED: {
    status: 0,
    retryable: false,
    description:
      'Processing failed on the data of this payload or its device; the payload is kept in the dead-letter stream (`vigil queue requeue` puts it back).',
  },
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;
