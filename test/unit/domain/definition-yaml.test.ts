import { describe, expect, it } from 'vitest';
import { definitionYaml, parseDefinitionYaml } from '../../../src/domain/definition-spec.ts';

const TEXT = `name: Freezer
manufacturer: Acme
version: "2"
icon: snowflake
parser: freezer.js
availability: { timeoutMinutes: 30, status: CRITICAL }
dataPoints:
  - name: Temperature
    displayName: Inside
    dataType: temperature
    hysteresis: 0.5
    thresholds:
      - { status: WARNING, above: -15, for: 10m, description: Warming up }
      - { status: CRITICAL, above: -5 }
    stale: { after: 30m, status: WARNING }
  - name: Door
    dataType: boolean
    thresholds:
      - { status: WARNING, equals: true, for: 2m }
`;

describe('definitionYaml', () => {
  it('writes a codec definition’s parserFormat, source and radio back', () => {
    const text =
      'name: T\nmanufacturer: A\nversion: "1"\nparser: t.js\nparserFormat: ts013\ndataPoints:\n  - { name: Lat, dataType: number, source: position.latitude }\n  - { name: RSSI, dataType: number, radio: rssi }\n';
    const { spec, parserFile } = parseDefinitionYaml(text, 't.yaml');
    expect(parseDefinitionYaml(definitionYaml(spec, parserFile), 't.yaml').spec).toEqual(spec);
  });

  it('writes a definition back as the file it was read from: the same spec when read again', () => {
    const { spec, parserFile } = parseDefinitionYaml(TEXT, 'freezer.yaml');
    const written = definitionYaml(spec, parserFile);
    expect(written).toContain('for: 10m');
    expect(written).toContain('after: 30m');
    expect(parseDefinitionYaml(written, 'again.yaml')).toEqual({ spec, parserFile: 'freezer.js' });
  });

  it('reads a draft without a parser field, naming the parser after the definition', () => {
    const { parserFile } = parseDefinitionYaml(TEXT.replace('parser: freezer.js\n', ''), 'draft', {
      parserOptional: true,
    });
    expect(parserFile).toBe('Freezer.js');
    expect(() => parseDefinitionYaml(TEXT.replace('parser: freezer.js\n', ''), 'file')).toThrow();
  });

  it('says where a problem is: the line and column in the error details', () => {
    const bad = TEXT.replace('dataType: boolean', 'dataType: bool');
    try {
      parseDefinitionYaml(bad, 'x.yaml');
      expect.unreachable();
    } catch (err) {
      expect((err as { code: string }).code).toBe('INVALID_INPUT');
      expect((err as { details: unknown }).details).toEqual({
        field: 'dataPoints[1].dataType',
        line: 17,
        column: 15,
      });
    }
  });
});
