import { BYTE_HELPERS_SOURCE } from './harness-bytes.ts';

/**
 * The JavaScript that runs inside every parser context, before the user's code. It is a separate
 * script with its own filename, so line and column numbers in the user's file are never shifted.
 *
 * Evaluating it replaces `console` with a bounded capture, removes `WebAssembly`, defines the byte
 * helpers (harness-bytes.ts), and returns `install(filename, maxResultChars, format)`. Called after
 * the user's script has run, `install` finds `parsePayload` (or, for a 'ts013' codec,
 * `decodeUplink`) and returns `runBatch(inputJson, expectObject)`: one call parses a whole batch,
 * each input in its own try/catch, and answers with one JSON string of outcomes. Intrinsics are
 * captured before user code runs; whatever user code tampers with afterwards can only spoil its own
 * results, and the host validates every outcome anyway.
 */
export const HARNESS_FILENAME = 'vigil:sandbox-harness';

/** Lines kept per input from console.log & co, and characters kept per line. */
export const CONSOLE_MAX_LINES = 20;
export const CONSOLE_MAX_LINE_CHARS = 200;

/** Error messages, and each of a codec's warnings, are clipped to this many characters. */
export const MESSAGE_MAX_CHARS = 500;

/** Warnings kept per input from a codec's result. */
export const CODEC_MAX_WARNINGS = 20;

export const HARNESS_SOURCE = String.raw`(function () {
  'use strict';
  const jsonParse = JSON.parse;
  const jsonStringify = JSON.stringify;
  const toText = String;
  const defineProperty = Object.defineProperty;
  const hasOwn = Object.hasOwn;
  const isArray = Array.isArray;
  const DateType = Date;
  const ReferenceErrorType = ReferenceError;
  const TypeErrorType = TypeError;
  const decodeHex = ${BYTE_HELPERS_SOURCE};
  let logs = null;

  function clip(text, max) {
    return text.length > max ? text.slice(0, max) + '…' : text;
  }

  function formatArg(arg) {
    if (typeof arg === 'string') return arg;
    try {
      const json = jsonStringify(arg);
      return json === undefined ? toText(arg) : json;
    } catch (_) {
      return toText(arg);
    }
  }

  function capture() {
    if (logs === null) logs = [];
    if (logs.length >= ${CONSOLE_MAX_LINES}) return;
    let line = '';
    for (let i = 0; i < arguments.length; i++) {
      line += (i === 0 ? '' : ' ') + formatArg(arguments[i]);
      if (line.length > ${CONSOLE_MAX_LINE_CHARS}) break;
    }
    logs[logs.length] = clip(line, ${CONSOLE_MAX_LINE_CHARS});
  }

  const consoleObject = { log: capture, info: capture, warn: capture, error: capture, debug: capture };
  defineProperty(globalThis, 'console', { value: consoleObject, writable: true, configurable: true });
  delete globalThis.WebAssembly;

  return function install(filename, maxResultChars, format) {
    const codec = format === 'ts013';
    const name = codec ? 'decodeUplink' : 'parsePayload';
    // Each name is looked up where the user's script put it: a global, or a top-level const or let.
    const entry = codec
      ? typeof decodeUplink === 'undefined' ? undefined : decodeUplink
      : typeof parsePayload === 'undefined' ? undefined : parsePayload;
    if (entry === undefined) throw new ReferenceErrorType(name + ' is not defined');
    if (typeof entry !== 'function') throw new TypeErrorType(name + ' is not a function');
    const location = /^(\d+):(\d+)/;

    // ' (at file.js:3:9)' for the first stack frame in the user's file, '' when there is none.
    function locate(stack) {
      let at = stack.indexOf('(' + filename + ':');
      if (at < 0) at = stack.indexOf(' ' + filename + ':');
      if (at < 0) return '';
      const found = location.exec(stack.slice(at + filename.length + 2));
      return found === null ? '' : ' (at ' + filename + ':' + found[1] + ':' + found[2] + ')';
    }

    function describe(err) {
      try {
        if (err !== null && (typeof err === 'object' || typeof err === 'function')) {
          const where = locate(toText(err.stack));
          return clip(toText(err.name) + ': ' + toText(err.message), ${MESSAGE_MAX_CHARS}) + where;
        }
        return clip(name + ' threw ' + formatArg(err), ${MESSAGE_MAX_CHARS});
      } catch (_) {
        return name + ' threw a value that cannot be described';
      }
    }

    function kindOf(value) {
      if (value === null) return 'null';
      if (typeof value !== 'object') return typeof value;
      try {
        return Array.isArray(value) ? 'an array' : 'a ' + toText(Object.prototype.toString.call(value));
      } catch (_) {
        return 'an object';
      }
    }

    function failure(code, message) {
      return '{"ok":false,"code":"' + code + '","message":' + jsonStringify(message) + withLogs() + '}';
    }

    function withLogs() {
      return logs === null ? '' : ',"logs":' + jsonStringify(logs);
    }

    function isThenable(value) {
      try {
        return value !== null && typeof value === 'object' && typeof value.then === 'function';
      } catch (_) {
        return false;
      }
    }

    function runOne(payloadStr, payloadRaw, expectObject) {
      let value;
      try {
        value = entry(payloadStr, payloadRaw);
      } catch (err) {
        return failure('PARSER_ERROR', describe(err));
      }
      if (isThenable(value)) {
        return failure('PARSER_BAD_RESULT', 'parsePayload returned a Promise; parsers must be synchronous');
      }
      let json;
      try {
        json = jsonStringify(value);
      } catch (err) {
        return failure('PARSER_BAD_RESULT', 'the result cannot be turned into JSON: ' + describe(err));
      }
      if (typeof json !== 'string') {
        return failure('PARSER_BAD_RESULT', 'parsePayload returned ' + kindOf(value) + ', which has no JSON form');
      }
      if (json.length > maxResultChars) {
        return failure(
          'PARSER_BAD_RESULT',
          'the result is ' + json.length + ' characters of JSON, over the limit of ' + maxResultChars,
        );
      }
      if (expectObject && json.charCodeAt(0) !== 123) {
        return failure('PARSER_BAD_RESULT', 'parsePayload must return an object, not ' + kindOf(value));
      }
      return '{"ok":true,"value":' + json + withLogs() + '}';
    }

    // A codec's messages as strings, each formatted as console.log formats its arguments.
    function warningsOf(list) {
      const warnings = [];
      for (let i = 0; i < list.length && i < ${CODEC_MAX_WARNINGS}; i++) warnings[i] = clip(formatArg(list[i]), ${MESSAGE_MAX_CHARS});
      return warnings;
    }

    function errorsOf(list) {
      let message = '';
      for (let i = 0; i < list.length && message.length <= ${MESSAGE_MAX_CHARS}; i++) {
        message += (i === 0 ? '' : '; ') + formatArg(list[i]);
      }
      return clip(message, ${MESSAGE_MAX_CHARS});
    }

    // A codec's result field, own properties only (as JSON would see it); null counts as absent.
    function fieldOf(result, key) {
      const value = hasOwn(result, key) ? result[key] : undefined;
      return value === null ? undefined : value;
    }

    function notAnArray(key, value) {
      return failure('PARSER_BAD_RESULT', "decodeUplink's " + key + ' must be an array of strings, not ' + kindOf(value));
    }

    function codecOutcome(result) {
      if (result === null || typeof result !== 'object' || isArray(result)) {
        return failure('PARSER_BAD_RESULT', 'decodeUplink must return an object {data, warnings, errors}, not ' + kindOf(result));
      }
      const errors = fieldOf(result, 'errors');
      if (errors !== undefined && !isArray(errors)) return notAnArray('errors', errors);
      if (errors !== undefined && errors.length > 0) return failure('PARSER_CODEC_ERRORS', errorsOf(errors));
      const warnings = fieldOf(result, 'warnings');
      if (warnings !== undefined && !isArray(warnings)) return notAnArray('warnings', warnings);
      const data = hasOwn(result, 'data') ? result.data : undefined;
      let json = '{}';
      if (data !== undefined) {
        try {
          json = jsonStringify(data);
        } catch (err) {
          return failure('PARSER_BAD_RESULT', "decodeUplink's data cannot be turned into JSON: " + describe(err));
        }
        if (typeof json !== 'string' || json[0] !== '{') {
          return failure('PARSER_BAD_RESULT', "decodeUplink's data must be an object, not " + kindOf(data));
        }
      }
      const warned = warnings === undefined || warnings.length === 0 ? '' : ',"warnings":' + jsonStringify(warningsOf(warnings));
      if (json.length + warned.length > maxResultChars) {
        return failure(
          'PARSER_BAD_RESULT',
          'the result is ' + (json.length + warned.length) + ' characters of JSON, over the limit of ' + maxResultChars,
        );
      }
      return '{"ok":true,"value":' + json + warned + withLogs() + '}';
    }

    // One codec input: [bytesHex, fPort, recvTimeMs], turned into TS013's {bytes, fPort, recvTime}.
    function runCodec(row) {
      let result;
      try {
        result = entry({ bytes: decodeHex(row[0], 'bytesHex'), fPort: row[1], recvTime: new DateType(row[2]) });
      } catch (err) {
        return failure('PARSER_ERROR', describe(err));
      }
      if (isThenable(result)) {
        return failure('PARSER_BAD_RESULT', 'decodeUplink returned a Promise; codecs must be synchronous');
      }
      try {
        return codecOutcome(result);
      } catch (err) {
        // A getter of the result threw, or a Proxy did.
        return failure('PARSER_ERROR', describe(err));
      }
    }

    function runCodecBatch(inputJson) {
      const inputs = jsonParse(inputJson);
      let out = '[';
      for (let i = 0; i < inputs.length; i++) {
        logs = null;
        out += (i === 0 ? '' : ',') + runCodec(inputs[i]);
      }
      logs = null;
      return out + ']';
    }

    if (codec) return runCodecBatch;
    return function runBatch(inputJson, expectObject) {
      const inputs = jsonParse(inputJson);
      let out = '[';
      for (let i = 0; i < inputs.length; i++) {
        const input = inputs[i];
        logs = null;
        const result =
          typeof input === 'string' ? runOne(input, input, expectObject) : runOne(input[0], input[1], expectObject);
        out += (i === 0 ? '' : ',') + result;
      }
      logs = null;
      return out + ']';
    };
  };
})()`;
