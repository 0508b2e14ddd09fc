import {
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLCompositeType,
  type GraphQLSchema,
  getArgumentValues,
  getNamedType,
  getNullableType,
  getOperationAST,
  getVariableValues,
  isInterfaceType,
  isListType,
  isObjectType,
  Kind,
  type SelectionSetNode,
} from 'graphql'

/** An operation as it is about to run. */
export interface Operation {
  schema: GraphQLSchema
  document: DocumentNode
  variableValues?: Readonly<Record<string, unknown>> | null | undefined
  operationName?: string | null | undefined
}

/**
 * The requested cost of an operation, known before it runs, as Shopify's and GitHub's
 * GraphQL APIs count it: every object the operation may return costs 1, and a list of
 * objects counts as many as its `first` argument asks for (1 without one). Scalars are
 * free. At least 1, so that no operation is free.
 *
 * @example
 * ```ts
 * // products(first: 100) { title reviews(first: 5) { stars } }: 100 × (1 + 5) = 600
 * requestedCost({ schema, document: parse(query) })
 * ```
 */
export function requestedCost({
  schema,
  document,
  variableValues,
  operationName,
}: Operation): number {
  const operation = getOperationAST(document, operationName)
  const root = operation && schema.getRootType(operation.operation)
  if (!operation || !root) return 1
  const coerced = getVariableValues(
    schema,
    operation.variableDefinitions ?? [],
    variableValues ?? {},
  )
  // Variables that do not coerce fail the operation before anything runs.
  if (coerced.errors) return 1
  const fragments = new Map<string, FragmentDefinitionNode>()
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) {
      fragments.set(definition.name.value, definition)
    }
  }

  function selectionCost(type: GraphQLCompositeType, selectionSet: SelectionSetNode): number {
    let cost = 0
    for (const selection of selectionSet.selections) {
      if (selection.kind === Kind.FIELD) {
        const field =
          isObjectType(type) || isInterfaceType(type)
            ? type.getFields()[selection.name.value]
            : undefined
        const named = field && getNamedType(field.type)
        if (!field || !selection.selectionSet || !(isObjectType(named) || isInterfaceType(named))) {
          continue
        }
        const { first } = getArgumentValues(field, selection, coerced.coerced)
        const count = isListType(getNullableType(field.type))
          ? Math.max(0, typeof first === 'number' ? first : 1)
          : 1
        cost += count * (1 + selectionCost(named, selection.selectionSet))
      } else {
        const fragment =
          selection.kind === Kind.FRAGMENT_SPREAD ? fragments.get(selection.name.value) : selection
        if (!fragment) continue
        const on = fragment.typeCondition ? schema.getType(fragment.typeCondition.name.value) : type
        if (isObjectType(on) || isInterfaceType(on)) {
          cost += selectionCost(on, fragment.selectionSet)
        }
      }
    }
    return cost
  }

  return Math.max(1, selectionCost(root, operation.selectionSet))
}

/**
 * The actual cost of an operation, from its result: 1 for every object it returned (the
 * same rule as {@link requestedCost}, counted on what came back). 0 when it returned none
 * (an empty list, or no data after an error): settling to 0 gives the whole reservation
 * back.
 *
 * @example
 * ```ts
 * actualCost({ products: [{ title: 'a', reviews: [{ stars: 5 }] }] }) // 2
 * ```
 */
export function actualCost(data: unknown): number {
  // The root object holds the fields asked for; it is not one of them (no data at all: 0).
  return Math.max(0, countObjects(data) - 1)
}

function countObjects(value: unknown): number {
  if (Array.isArray(value)) return value.reduce((sum: number, item) => sum + countObjects(item), 0)
  if (value === null || typeof value !== 'object') return 0
  let count = 1
  for (const field of Object.values(value)) count += countObjects(field)
  return count
}
