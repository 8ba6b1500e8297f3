// Validates the contracts with their ecosystems' own validators (make
// contracts): asyncapi.yaml as AsyncAPI 3.0 with @asyncapi/parser (the
// parser of the AsyncAPI CLI and generator), openapi.yaml as OpenAPI 3.1
// with @apidevtools/swagger-parser. Paths default to the two documents
// here; exits 1, naming every problem, when one is not valid.
import { readFile } from 'node:fs/promises';
import { Parser } from '@asyncapi/parser';
import SwaggerParser from '@apidevtools/swagger-parser';

const [asyncPath = 'asyncapi.yaml', openPath = 'openapi.yaml'] = process.argv.slice(2);
let failed = false;

const { document, diagnostics } = await new Parser().parse(await readFile(asyncPath, 'utf8'));
// Severity 0 is an error, 1 a warning; both fail: the document is ours.
for (const d of diagnostics.filter((d) => d.severity <= 1)) {
  console.error(`${asyncPath}: ${d.path.join('.')}: ${d.message} (${d.code})`);
  failed = true;
}
if (!document) {
  failed = true;
} else if (document.version() !== '3.0.0') {
  console.error(`${asyncPath}: AsyncAPI ${document.version()}, want 3.0.0`);
  failed = true;
} else if (!failed) {
  console.log(`${asyncPath}: valid AsyncAPI ${document.version()}, ${document.channels().length} channels, ${document.messages().length} messages`);
}

try {
  const api = await SwaggerParser.validate(openPath);
  if (!api.openapi?.startsWith('3.1.')) {
    throw new Error(`OpenAPI ${api.openapi}, want 3.1`);
  }
  console.log(`${openPath}: valid OpenAPI ${api.openapi}, ${Object.keys(api.paths).length} paths`);
} catch (err) {
  console.error(`${openPath}: ${err.message}`);
  failed = true;
}

process.exit(failed ? 1 : 0);
