import { BYTE_HELPERS_SOURCE } from './harness-bytes.ts';

/**
 * The JavaScript that runs inside every parser context, before the user's code. It is a separate
 * script with its own filename, so line and column numbers in the user's file are never shifted.
 *
 * Evaluating it replaces `console` with a bounded capture, removes `WebAssembly`, defines the byte
 * helpers (harness-bytes.ts), and returns `install(filename, maxResultChars)`. Called after the
 * user's script has run, `install` finds `parsePayload` and returns `runBatch(inputJson,
 * expectObject)`: one call parses a whole batch, each input in its own try/catch, and answers with
 * one JSON string of outcomes. Intrinsics are
 * captured before user code runs; whatever user code tampers with afterwards can only spoil its own
 * results, and the host validates every outcome anyway.
 */
export const HARNESS_FILENAME = 'vigil:sandbox-harness';

/** Lines kept per input from console.log & co, and characters kept per line. */
export const CONSOLE_MAX_LINES = 20;
export const CONSOLE_MAX_LINE_CHARS = 200;

/** Error messages are clipped to this many characters. */
export const MESSAGE_MAX_CHARS = 500;

export const HARNESS_SOURCE = String.raw`(function () {
  'use strict';
  const jsonParse = JSON.parse;
  const jsonStringify = JSON.stringify;
  const toText = String;
  const defineProperty = Object.defineProperty;
  ${BYTE_HELPERS_SOURCE};
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

  return function install(filename, maxResultChars) {
    if (typeof parsePayload === 'undefined') throw new ReferenceError('parsePayload is not defined');
    if (typeof parsePayload !== 'function') throw new TypeError('parsePayload is not a function');
    const parse = parsePayload;
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
        return clip('parsePayload threw ' + formatArg(err), ${MESSAGE_MAX_CHARS});
      } catch (_) {
        return 'parsePayload threw a value that cannot be described';
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
        value = parse(payloadStr, payloadRaw);
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
