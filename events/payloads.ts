import { z } from 'zod';
import { EMAIL_ADDRESS_PATTERN } from '../lib/subject-index';
import {
  alpha2Field,
  companyIdField,
  dateField,
  datetimeField,
  integerField,
  jsonObjectField,
  urlField,
} from './fields';

// Objects are loose: fields the spec does not name pass through unchanged. Fields that only the full
// payload carries (spec 2.2 to 2.4) are optional; every other field is required.

export const STATUS_GROUPS = [0, 1, 19, 20, 21] as const;
export const SOURCE_TYPES = [
  'applied',
  'applied-silent',
  'copied',
  'imported',
  'recommended',
  'sourced',
  'uploaded',
  'uploaded-extension',
] as const;

/** 2.2: event_type=company, action=signup. */
export const companySignupDataSchema = z.looseObject({
  company_id: companyIdField,
  internal_id: integerField.optional(),
  company_name: z.string(),
  has_config: z.boolean(),
  dt_created: datetimeField,
  settings: jsonObjectField.optional(),
});

/** The company member of 2.3 and 2.4. */
export const companySchema = z.looseObject({
  id: companyIdField,
  internal_id: integerField,
  settings: jsonObjectField,
});

export const locationJsonSchema = z.looseObject({
  city: z.string(),
  city_short: z.string(),
  country: z.string(),
  country_short: alpha2Field,
  area_1: z.string(),
  area_1_short: z.string(),
});

export const locationSchema = z.looseObject({
  location: z.string(),
  location_json: locationJsonSchema,
});

export const requisitionSchema = z.looseObject({
  internal_id: integerField,
  external_id: z.string(),
  identifier: z.string(),
  title: z.string(),
});

export const layerSchema = z.looseObject({
  id: integerField,
  external_identifier: z.string(),
  description: z.string(),
  name: z.string(),
  layer_name: z.string(),
});

export const categorySchema = z.looseObject({ id: integerField, text: z.string() });

export const departmentSchema = z.looseObject({ id: integerField, name: z.string() });

const jobShape = {
  id: z.string(),
  internal_id: integerField.optional(),
  internal_reference: z.string().optional(),
  title: z.string(),
  from_date: dateField,
  to_date: dateField,
  description: z.string(),
  skills: z.string(),
  locations: z.array(locationSchema),
  requisition: requisitionSchema.optional(),
  experience: z.string(),
  language: alpha2Field,
  ad_url: urlField,
  layers: z.array(layerSchema).optional(),
  categories: z.array(categorySchema).optional(),
  departments: z.array(departmentSchema).optional(),
  settings: jsonObjectField,
};

/** The job member of 2.3. */
export const jobSchema = z.looseObject(jobShape);

/** 2.3: event_type=job, action=new. */
export const jobNewDataSchema = z.looseObject({ company: companySchema, job: jobSchema });

export const candidateStatusSchema = z.looseObject({
  id: integerField,
  name: z.string(),
  group: z.union(
    STATUS_GROUPS.map((g) => z.literal(g)),
    { message: `must be one of ${STATUS_GROUPS.join(', ')}` },
  ),
});

const fileUrl = urlField.nullable();

export const candidateFilesSchema = z.looseObject({
  cv: fileUrl,
  cover_letter: fileUrl,
  other_1: fileUrl,
  other_2: fileUrl,
  other_3: fileUrl,
  other_4: fileUrl,
  other_5: fileUrl,
});

export const answerSchema = z.looseObject({
  id: integerField,
  question_id: integerField,
  answer_type: z.string().min(1),
  text: z.string(),
});

export const requestAuthorSchema = z.looseObject({
  // The subject index's own pattern: any address accepted here can be erased (lib/subject-index.ts).
  email: z.string().regex(EMAIL_ADDRESS_PATTERN, { message: 'must be an e-mail address' }),
  first_name: z.string(),
  last_name: z.string(),
});

/** The candidate member of 2.4; the shortened sample carries only the required fields. */
export const candidateSchema = z.looseObject({
  id: z.string(),
  internal_id: integerField.optional(),
  first_name: z.string(),
  last_name: z.string(),
  ln_url: urlField.optional(),
  email: z.string(),
  phone_number: z.string(),
  message: z.string(),
  referrer_domain: z.string().optional(),
  status: candidateStatusSchema,
  files: candidateFilesSchema.optional(),
  data: z.record(z.string(), z.union([z.string(), z.array(z.string())])).optional(),
  application_dt_created: datetimeField.optional(),
  answers: z.array(answerSchema).optional(),
  source_type: z.enum(SOURCE_TYPES, { message: `must be one of ${SOURCE_TYPES.join(', ')}` }).optional(),
  request_author: requestAuthorSchema.optional(),
});

/** The job member of 2.4: the job of 2.3, but its layers may carry only id, name and layer_name. */
export const candidateJobSchema = z.looseObject({
  ...jobShape,
  layers: z.array(layerSchema.partial({ external_identifier: true, description: true })).optional(),
});

/** 2.4: event_type=candidate, action=new. */
export const candidateNewDataSchema = z.looseObject({
  company: companySchema,
  candidate: candidateSchema,
  job: candidateJobSchema,
});

export type CompanySignupData = z.infer<typeof companySignupDataSchema>;
export type JobNewData = z.infer<typeof jobNewDataSchema>;
export type CandidateNewData = z.infer<typeof candidateNewDataSchema>;
export type Company = z.infer<typeof companySchema>;
export type Job = z.infer<typeof jobSchema>;
export type CandidateJob = z.infer<typeof candidateJobSchema>;
export type Candidate = z.infer<typeof candidateSchema>;
export type CandidateStatus = z.infer<typeof candidateStatusSchema>;
export type CandidateFiles = z.infer<typeof candidateFilesSchema>;
export type Answer = z.infer<typeof answerSchema>;
export type RequestAuthor = z.infer<typeof requestAuthorSchema>;
export type Location = z.infer<typeof locationSchema>;
export type LocationJson = z.infer<typeof locationJsonSchema>;
export type Requisition = z.infer<typeof requisitionSchema>;
export type Layer = z.infer<typeof layerSchema>;
export type Category = z.infer<typeof categorySchema>;
export type Department = z.infer<typeof departmentSchema>;
