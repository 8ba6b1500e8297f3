// Package fakebatch is an OpenAI Batch API for tests, benchmarks and the
// chaos harness: the files endpoints (upload with purpose batch, read,
// content, delete) and the batches endpoints (create, get, list, cancel)
// with the request and response shapes of the real API, as the openai-go
// client sends and reads them. A batch validates its input file as the
// real one does (a line a request to the batch's endpoint, custom_ids
// unique, one model), then answers each line with Server.Answer once its
// Delay has passed; Faults make uploads, creations, whole batches or
// single lines fail. It counts what it was sent, so a test can tell that
// no custom_id came twice.
package fakebatch
